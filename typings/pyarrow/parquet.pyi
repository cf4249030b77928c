# Local stub: the parts of pyarrow.parquet that streamql's tests use (they read its parquet files as
# other tools do).
from . import Table

def read_table(source: str) -> Table: ...
