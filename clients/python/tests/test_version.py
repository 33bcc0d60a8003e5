"""The protocol's version, checked at connect (PROTOCOL.md §12): another
major is refused with an error naming both, and nothing is written."""

from __future__ import annotations

import pytest

import echomq
from echomq.executor import _module_speaks

from conftest import RedisServer, keyspace, transitions_sent, unique_queue


async def test_a_queue_written_by_another_major_is_refused_at_open(conn: echomq.Connection,
                                                                  server: RedisServer) -> None:
    name = unique_queue("major")
    client = server.client()
    client.hset("emq:{" + name + "}:config", "protocol", "2.0")
    before = (transitions_sent(client), keyspace(client, "emq:{" + name + "}"))
    with pytest.raises(echomq.OtherMajor) as refused:
        await conn.queue(name)
    assert "2.0" in str(refused.value) and echomq.PROTOCOL in str(refused.value)
    with pytest.raises(echomq.OtherMajor):
        echomq.SyncQueue.open(server.url, name)
    assert (transitions_sent(client), keyspace(client, "emq:{" + name + "}")) == before
    client.close()


async def test_the_server_refuses_another_major_too(conn: echomq.Connection, server: RedisServer) -> None:
    name = unique_queue("major")
    client = server.client()
    client.hset("emq:{" + name + "}:config", "protocol", "2.0")
    before = keyspace(client, "emq:{" + name + "}")
    # Past the host's check (a queue opened before another major wrote it):
    queue = echomq.Queue(conn, echomq.Keyspace(name))
    with pytest.raises(echomq.VersionError) as refused:
        await queue.enqueue(b"x")
    assert refused.value.code == "EMQVERSION" and "2.0" in refused.value.message
    assert keyspace(client, "emq:{" + name + "}") == before
    client.close()


async def test_a_queue_of_this_major_opens(conn: echomq.Connection, server: RedisServer) -> None:
    name = unique_queue("minor")
    client = server.client()
    client.hset("emq:{" + name + "}:config", "protocol", "1.7")
    queue = await conn.queue(name)
    assert (await queue.enqueue(b"x")).enqueued
    assert (await queue.configure()).protocol == "1.7"
    client.close()


def test_the_modules_version_decides() -> None:
    assert _module_speaks(None) is False
    assert _module_speaks(echomq.PROTOCOL.encode()) is True
    assert _module_speaks(b"1.99") is True
    assert _module_speaks(b"1.11") is True  # §11.1's MODULE_MINOR: 1.11's RETRY of nine keys
    with pytest.raises(echomq.OtherMajor) as other:
        _module_speaks(b"2.0")
    assert "2.0" in str(other.value) and echomq.PROTOCOL in str(other.value)
    for older in (b"1.0", b"1.10"):
        with pytest.raises(echomq.OlderMinor):
            _module_speaks(older)


def test_the_module_answers_this_packages_version(servers: object) -> None:
    server = servers["native"]  # type: ignore[index]
    client = server.client()
    assert client.execute_command("EMQ.VERSION") == echomq.PROTOCOL.encode()
    client.close()


def test_the_package_summary_names_this_protocol() -> None:
    """The installed metadata's summary names the protocol the package speaks
    (it said 1.1 at 1.5: issue 51)."""
    from importlib.metadata import metadata

    assert f"(PROTOCOL.md {echomq.PROTOCOL})" in metadata("echomq")["Summary"]


def test_the_version_is_the_wheel_metadata_s_and_the_command_says_it() -> None:
    import subprocess
    import sys
    from importlib.metadata import metadata
    from pathlib import Path

    assert echomq.__version__ == metadata("echomq")["Version"] != "0+unknown"
    done = subprocess.run([str(Path(sys.executable).with_name("echomq")), "--version"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip() == f"echomq {echomq.__version__}"
