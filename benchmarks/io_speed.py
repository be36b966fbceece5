"""Reading and writing a gzipped phrase table: Python's gzip module vs python-isal.

Prints lines/s for each way of decompressing (and compressing) the same table, so the choice
of python-isal in mosesrnn.io.compressed stays a measured one.

    python benchmarks/io_speed.py [TABLE.gz] [--lines N]
"""
import argparse
import gzip
import io
import time

from isal import igzip, igzip_threaded

DEFAULT_TABLE = "../shared/data/tatoeba-moses-en-fr/phrase-table.gz"


def read_lines(open_stream, path: str, limit: int) -> tuple[list[bytes], float]:
    started = time.perf_counter()
    lines = []
    with open_stream(path) as stream:
        for line in stream:
            lines.append(line)
            if len(lines) == limit:
                break
    return lines, time.perf_counter() - started


def write_lines(open_stream, lines: list[bytes]) -> tuple[int, float]:
    sink = io.BytesIO()
    started = time.perf_counter()
    with open_stream(sink) as stream:
        for line in lines:
            stream.write(line)
    return len(sink.getvalue()), time.perf_counter() - started


READERS = {
    "gzip (stdlib)": lambda path: gzip.open(path, "rb"),
    "isal igzip": lambda path: igzip.open(path, "rb"),
    "isal igzip_threaded (used)": lambda path: igzip_threaded.open(path, "rb", threads=1),
}
WRITERS = {
    "gzip (stdlib) level 6": lambda sink: gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=6),
    "gzip (stdlib) level 1": lambda sink: gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=1),
    "isal igzip level 1": lambda sink: igzip.IGzipFile(fileobj=sink, mode="wb", compresslevel=1),
    "isal igzip_threaded level 1 (used)": lambda sink: igzip_threaded.open(sink, "wb", compresslevel=1, threads=1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?", default=DEFAULT_TABLE)
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    lines = []
    for name, opener in READERS.items():
        lines, seconds = read_lines(opener, args.table, args.lines)
        print(f"read  {name:36s} {len(lines) / seconds:12,.0f} lines/s")
    for name, opener in WRITERS.items():
        size, seconds = write_lines(opener, lines)
        print(f"write {name:36s} {len(lines) / seconds:12,.0f} lines/s  {size / 2**20:6.1f} MiB")


if __name__ == "__main__":
    main()
