"""The system: which backends can run here and the devices they offer (cuda.core's
`system`)."""

from __future__ import annotations

from ptxport.runtime import backends
from ptxport.runtime.device import Device

__all__ = ["System", "system"]


class System:
    """What ptxport can run on here; use the `system` instance."""

    @property
    def backends(self) -> dict[str, str]:
        """Every backend ptxport knows, with "" when it can run here or else why not."""
        return {name: backends.availability(name)[1] for name in backends.KNOWN}

    @property
    def devices(self) -> tuple[Device, ...]:
        """Every device of every backend that can run here, best first."""
        found, host_only = [], []
        for name in backends.KNOWN:
            if backends.availability(name)[0]:
                backend = backends.get(name)
                devices = [Device(f"{name}:{i}") for i in range(backend.device_count())]
                # OpenCL on the host's own CPU ranks after the cpu backend (see best_backend)
                if name == "opencl" and backend.host_only():
                    host_only += devices
                else:
                    found += devices
        return tuple(found + host_only)

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    def __repr__(self) -> str:
        return f"<System: {', '.join(map(str, self.devices))}>"


system = System()
