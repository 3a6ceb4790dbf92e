"""Joining a Ray cluster, shared by ``vsb run --executor ray`` (``vsb.run.executors_ray``) and
``vsb evaluate --executor ray`` (``vsb.evaluators.evaluate_ray``): the ``ray`` import with
the install hint, a reachability check of ``HOST:PORT`` addresses (Ray itself retries for
minutes), and a session that starts a local cluster when no address is given and shuts
down only what it started."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vsb.errors import InputError

INSTALL_HINT = "pip install 'vsb[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, or one ``InputError`` with the install hint."""
    try:
        import ray
    except ImportError:
        raise InputError(f"--executor ray needs Ray: {INSTALL_HINT}") from None
    return ray


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A ``HOST:PORT`` address must accept a connection within ``timeout_s``; ``auto`` and
    ``ray://`` addresses are left to Ray."""
    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address or not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        raise InputError(
            f"--ray-address {address}: no Ray head answers there ({err.strerror or err}); "
            "start one with `ray start --head` or pass the address it prints"
        ) from None


def connect(ray: Any, address: str | None, num_cpus: int | None = None) -> bool:
    """Join the cluster at ``address`` (None: start a local one); True when this call
    started Ray (the caller then shuts it down)."""
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if address is None:
        kw.update(num_cpus=num_cpus, include_dashboard=False)
    else:
        check_reachable(address)
    logger = logging.getLogger("ray")
    level = logger.level
    logger.setLevel(logging.ERROR)  # Ray's start-up notices are not ours to print
    try:
        ray.init(address=address, **kw)
    except (ConnectionError, ValueError, RuntimeError) as err:
        where = address or "a local cluster"
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise InputError(f"--executor ray: cannot join {where}: {first}") from None
    finally:
        logger.setLevel(level)
    return True


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, joined to a cluster for the duration of the block."""
    ray = import_ray()
    started = connect(ray, address, num_cpus)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
