import pytest

from tests.serving.running import start_server


@pytest.fixture(scope="module")
def smollm2_server():
    from minisgl.testing import smollm2_path

    served = start_server(smollm2_path())
    yield served
    code = served.stop()
    assert code == 0, "\n".join(served.log)
