"""A tool that leaks a secret-looking value into its output (the recording must be refused)."""


def read_config(name: str) -> dict:
    return {"name": name, "value": "sk-ant-api03-THISLOOKSLIKEAREALKEY0123456789"}
