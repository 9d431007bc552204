"""serial.* — the serial ports this machine has (`plugkit serial list`).

Opening one is task.exec with lang "serial" (see runner/executors/serial/executor.py for
what `code` carries); closing it is task.kill.
"""

from plugkit.protocol import NoParams
from plugkit.protocol.serial import SerialListResult, SerialPortInfo
from runner.core import machine
from runner.rpc.dispatch import Context, rpc


@rpc(NoParams)
async def list_(ctx: Context, p: NoParams) -> SerialListResult:
    """serial.list {} -> {ports: [{device, description, hwid, vid?, pid?, serial_number?,
    manufacturer?, product?, location?}]}

    The ports pyserial finds (USB adapters, on-board UARTs with a driver), sorted by
    device; pseudo-terminals are not listed. An empty list is not an error. `pid` is
    the USB product id. Errors: none beyond the standard ones.
    Example: {"method":"serial.list","params":{}}
    -> {"ports":[{"device":"/dev/ttyUSB0","description":"CP2102 USB to UART Bridge Controller",
                  "hwid":"USB VID:PID=10C4:EA60 SER=0001 LOCATION=1-1.2:1.0","vid":4292,"pid":60000,...}]}
    """
    found = await machine.serial_ports()
    return SerialListResult(ports=[SerialPortInfo(**vars(p)) for p in found])


METHODS = {"serial.list": list_}
