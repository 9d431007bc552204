"""serial.* and task.exec with lang "serial". Params and results as pydantic models (the wire contract)."""

from typing import Literal, Optional

from pydantic import Field

from plugkit.protocol import OsPath, Params, Result


# --- serial.* and task.exec lang "serial" ---------------------------------------

class SerialOpenSpec(Params):
    """What task.exec with lang "serial" carries in `code`: a JSON object naming the
    device and its line settings (a bare device path is accepted as shorthand).
    Line endings are the writer's business: task.input data reaches the port as-is."""

    port: OsPath  # /dev/... or loop:// (tests)
    # 50 is the slowest termios rate; 12 Mbaud covers FTDI high-speed parts. Odd
    # rates in between (74880 for ESP8266 boot logs, 250000 for 3D printers) are real.
    baud: int = Field(default=115200, ge=50, le=12_000_000)
    bytesize: Literal[5, 6, 7, 8] = 8
    parity: Literal["N", "E", "O", "M", "S"] = "N"
    stopbits: Literal[1, 1.5, 2] = 1
    rtscts: bool = False
    xonxoff: bool = False
    hex: bool = False  # output as a hex dump; task.input data read as hex digits


class SerialPortInfo(Result):
    device: str
    description: str = ""
    hwid: str = ""
    vid: Optional[int] = None  # USB vendor id
    pid: Optional[int] = None  # USB product id (not a process id)
    serial_number: Optional[str] = None
    manufacturer: Optional[str] = None
    product: Optional[str] = None
    location: Optional[str] = None


class SerialListResult(Result):
    ports: list[SerialPortInfo]
