"""`eval --executor ray --ray-address ADDR` where no Ray cluster answers: one line and exit 2
at once (a closed port), and SIGINT / SIGTERM stop it while it waits on a peer that accepts
but never speaks (Ray's own client retried for over ten minutes and heard neither signal).
Real `formalbench` processes; a plain TCP listener stands in for the silent peer."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray
pytest.importorskip("ray")

HANG_GUARD_S = 120  # a hang fails the test here instead of the suite's timeout


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SilentPeer:
    """Accepts TCP connections and never answers, like a host whose port is open to
    something that is not Ray; counts the connections it accepted."""

    def __init__(self) -> None:
        # Ray replaces 127.0.0.1 by the machine's own address: listen on every interface.
        self.sock = socket.create_server(("0.0.0.0", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent_peer() -> Iterator[SilentPeer]:
    peer = SilentPeer()
    yield peer
    peer.close()


def eval_cmd(address: str, run_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "formalbench",
        "eval",
        "example-coq",
        "--executor",
        "ray",
        "--ray-address",
        address,
        "--run-dir",
        str(run_dir),
        "--quiet",
    ]


def test_a_closed_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    address = f"127.0.0.1:{closed_port()}"
    done = subprocess.run(
        eval_cmd(address, tmp_path / "run"), capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"formalbench: error: --ray-address {address}: cannot connect")
    assert "ray start --head" in lines[0]
    assert not (tmp_path / "run").exists()  # a failed start leaves no run folder


def test_an_address_without_the_ray_executor_is_refused(tmp_path: Path) -> None:
    from formalbench.core.errors import InputError
    from formalbench.pipelines.evaluate import run_evaluation
    from formalbench.pipelines.run_config import EvalConfig

    config = EvalConfig(dataset="example-coq", ray_address="127.0.0.1:1")
    with pytest.raises(InputError, match="--ray-address 127.0.0.1:1: it is read only with "):
        run_evaluation(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, -15)])
def test_a_signal_stops_the_wait_for_a_silent_peer(
    tmp_path: Path, silent_peer: SilentPeer, signum: int, code: int
) -> None:
    proc = subprocess.Popen(
        eval_cmd(f"127.0.0.1:{silent_peer.port}", tmp_path / "run"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        # The first connection is formalbench's reachability probe, the next one Ray's own
        # client: from then on the command sits in Ray's connect wait.
        while len(silent_peer.accepted) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "Ray never connected"
            time.sleep(0.05)
        proc.send_signal(signum)
        # A signal heard only after Ray's wait ends would show as that wait's error (exit 2).
        _, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "no Ray cluster answered" not in err
    if signum == signal.SIGINT:
        assert err.strip().splitlines()[-1] == "formalbench: interrupted"
