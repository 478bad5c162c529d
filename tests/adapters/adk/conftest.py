import pytest

from adk_testkit import DATA  # noqa: F401  (puts data/ on sys.path for the shop handlers)

pytest.importorskip("google.adk", reason="google-adk is not installed (pip install 'portagent[adk]')")


@pytest.fixture
def emu():
    """The emulator on a free loopback port, playing the adapter-test script."""
    from portagent.emulator import load_script, serve

    with serve(load_script(DATA / "emulator.yaml")) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_handlers():
    import shop_handlers

    shop_handlers.CALLS.clear()
    shop_handlers.REFUNDS.clear()
    yield
