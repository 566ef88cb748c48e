"""Where the tests find the reference data copied from the benchmarks (tests/data/)."""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
GTA_TOOLMETA = DATA / "gta" / "toolmeta.json"
TEVAL_API_DOC = DATA / "t-eval" / "api_descrip.json"
MTU_DIR = DATA / "mtu-bench"
