# Local stub: the parts of pyarrow.json that streamql uses.
from typing import IO

from . import Schema, Table

class ReadOptions:
    def __init__(self, use_threads: bool = ...) -> None: ...

class ParseOptions:
    def __init__(self, explicit_schema: Schema | None = ..., unexpected_field_behavior: str = ...) -> None: ...

def read_json(input_file: IO[bytes], read_options: ReadOptions | None = ...,
              parse_options: ParseOptions | None = ...) -> Table: ...
