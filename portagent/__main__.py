from portagent.cli import entrypoint

entrypoint()
