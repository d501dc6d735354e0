"""Workspace tools over ``EnvState.files`` (text) and ``EnvState.binaries`` (binary assets).

Paths are relative posix paths, normalised (``./a//b`` -> ``a/b``, backslashes read as ``/``);
an absolute path (``/x``, ``C:\\x``, ``~/x``) or a ``..`` component is refused as invalid
arguments. Directories are implicit: a directory exists when some file lies under it; ``.`` is
the workspace root.

- ``read_file(path)`` -> ``{path, content}``; a binary file -> ``{path, encoding: "base64",
  content, bytes}`` (its bytes as they were copied in)
- ``write_file(path, content)`` -> ``{path, chars, created}`` (creates or overwrites)
- ``edit_file(path, old_text, new_text)`` -> ``{path, replaced: 1}``; failed unless ``old_text``
  occurs exactly once
- ``list_dir(path=".")`` -> ``{path, entries: [{name, type: "file"|"dir"}]}``
- ``glob(pattern)`` -> ``{pattern, matches: [paths]}`` (``*``, ``?``, ``[..]`` within a path
  component; ``**`` across components)
- ``grep(pattern, path=".", ignore_case=False)`` -> ``{pattern, matches: [{path, line, text}],
  truncated}`` (Python regex; an invalid one is refused as invalid arguments; binary files are
  not searched)

Writing a text file over a binary one replaces it. AppWorld's own ``file_system`` app is served by
the appworld backend only.
"""

from __future__ import annotations

import base64
import posixpath
import re
from collections.abc import Collection, Iterable
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator

from messages.probes import JsonObject
from world.episodes.apps.base import Args, EpisodeTool, ToolContext, ToolFailed, ToolNotFound

MAX_GREP_MATCHES = 100
_DRIVE = re.compile(r"^[A-Za-z]:")


def normalise_path(value: str, *, directory: bool = False) -> str:
    """The workspace path ``value`` names ("" for the root of a directory argument); ValueError
    for an absolute path, a ``..`` component, or a file path naming the root."""
    raw = value.strip().replace("\\", "/")
    if not raw:
        if directory:
            return ""
        raise ValueError("the path is empty")
    if raw.startswith(("/", "~")) or _DRIVE.match(raw):
        raise ValueError(f"{value!r} is absolute: paths are relative to the workspace")
    if ".." in raw.split("/"):
        raise ValueError(f"{value!r} leaves the workspace ('..' is not allowed)")
    norm = posixpath.normpath(raw)
    if norm == ".":
        if directory:
            return ""
        raise ValueError(f"{value!r} names the workspace root, not a file")
    return norm


def _file_path(value: str) -> str:
    return normalise_path(value)


def _dir_path(value: str) -> str:
    return normalise_path(value, directory=True)


FilePath = Annotated[
    str, AfterValidator(_file_path), Field(description="A file path relative to the workspace.")
]
DirPath = Annotated[
    str,
    AfterValidator(_dir_path),
    Field(description="A directory relative to the workspace ('.' is its root)."),
]


def _paths(ctx: ToolContext) -> list[str]:
    return [*ctx.state.files, *ctx.state.binaries]


def _is_dir(files: Iterable[str], path: str) -> bool:
    return path == "" or any(f.startswith(path + "/") for f in files)


def _check_writable(files: Collection[str], path: str) -> None:
    if _is_dir(files, path):
        raise ToolFailed(f"{path} is a directory")
    parts = path.split("/")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in files:
            raise ToolFailed(f"{'/'.join(parts[:i])} is a file, not a directory")


def _read(ctx: ToolContext, path: str) -> str:
    if path in ctx.state.files:
        return ctx.state.files[path]
    if path in ctx.state.binaries:
        raise ToolFailed(f"{path} is a binary file: read_file gives its bytes as base64")
    if _is_dir(_paths(ctx), path):
        raise ToolFailed(f"{path} is a directory: list it instead")
    raise ToolNotFound(f"no file {path} in the workspace")


def _listing(ctx: ToolContext, path: str) -> JsonObject:
    files = _paths(ctx)
    if path in files:
        raise ToolFailed(f"{path} is a file: read it instead")
    if not _is_dir(files, path):
        raise ToolNotFound(f"no directory {path} in the workspace")
    prefix = f"{path}/" if path else ""
    entries: dict[str, str] = {}
    for name in files:
        if name.startswith(prefix):
            head, sep, _ = name[len(prefix) :].partition("/")
            entries[head] = "dir" if sep else "file"
    rows = [{"name": n, "type": t} for n, t in sorted(entries.items())]
    return {"path": path or ".", "entries": rows}


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a workspace glob: ``*``/``?``/``[..]`` stay within one component,
    ``**/`` matches any number of directories and a trailing ``**`` anything below."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


# ---------------------------------------------------------------- arguments


class PathArgs(Args):
    path: FilePath


class WriteArgs(Args):
    path: FilePath
    content: str = Field(description="The whole text of the file.")


class EditArgs(Args):
    path: FilePath
    old_text: str = Field(min_length=1, description="Text that occurs exactly once in the file.")
    new_text: str = Field(description="Its replacement.")


class DirArgs(Args):
    path: DirPath = "."


class GlobArgs(Args):
    pattern: str = Field(min_length=1, description="A glob such as 'notes/*.md' or '**/*.csv'.")

    @field_validator("pattern")
    @classmethod
    def _relative(cls, value: str) -> str:
        normalise_path(value)  # same rules as a path: relative, no '..'
        return value.strip().replace("\\", "/").removeprefix("./")


class GrepArgs(Args):
    pattern: str = Field(min_length=1, description="A Python regular expression.")
    path: DirPath = Field(default=".", description="A file or a directory to search under.")
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value


# ---------------------------------------------------------------- workspace tools


def read_file(ctx: ToolContext, args: PathArgs) -> JsonObject:
    data = ctx.state.binaries.get(args.path)
    if data is not None:
        size = len(base64.b64decode(data))
        return {"path": args.path, "encoding": "base64", "content": data, "bytes": size}
    return {"path": args.path, "content": _read(ctx, args.path)}


def write_file(ctx: ToolContext, args: WriteArgs) -> JsonObject:
    files = ctx.state.files
    _check_writable([p for p in _paths(ctx) if p != args.path], args.path)
    created = args.path not in files and args.path not in ctx.state.binaries
    ctx.state.binaries.pop(args.path, None)
    files[args.path] = args.content
    return {"path": args.path, "chars": len(args.content), "created": created}


def edit_file(ctx: ToolContext, args: EditArgs) -> JsonObject:
    text = _read(ctx, args.path)
    count = text.count(args.old_text)
    if count == 0:
        raise ToolFailed(f"old_text does not occur in {args.path}")
    if count > 1:
        raise ToolFailed(f"old_text occurs {count} times in {args.path}: give more context to make it unique")
    ctx.state.files[args.path] = text.replace(args.old_text, args.new_text, 1)
    return {"path": args.path, "replaced": 1}


def list_dir(ctx: ToolContext, args: DirArgs) -> JsonObject:
    return _listing(ctx, args.path)


def glob_files(ctx: ToolContext, args: GlobArgs) -> JsonObject:
    regex = glob_regex(args.pattern)
    return {"pattern": args.pattern, "matches": sorted(p for p in _paths(ctx) if regex.match(p))}


def grep(ctx: ToolContext, args: GrepArgs) -> JsonObject:
    files = ctx.state.files
    if args.path in files:
        paths = [args.path]
    elif _is_dir(_paths(ctx), args.path):
        prefix = f"{args.path}/" if args.path else ""
        paths = sorted(p for p in files if p.startswith(prefix))
    else:
        raise ToolNotFound(f"no file or directory {args.path} in the workspace")
    regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    matches: list[dict[str, Any]] = []
    truncated = False
    for path in paths:
        for number, line in enumerate(files[path].splitlines(), start=1):
            if regex.search(line):
                if len(matches) == MAX_GREP_MATCHES:
                    truncated = True
                    break
                matches.append({"path": path, "line": number, "text": line})
        if truncated:
            break
    return {"pattern": args.pattern, "matches": matches, "truncated": truncated}


WORKSPACE_TOOLS: tuple[EpisodeTool[Any], ...] = (
    EpisodeTool("read_file", "Read a text file of the workspace.", PathArgs, read_file),
    EpisodeTool("write_file", "Create or overwrite a text file of the workspace.", WriteArgs, write_file),
    EpisodeTool(
        "edit_file", "Replace one exact, unique piece of text in a workspace file.", EditArgs, edit_file
    ),
    EpisodeTool("list_dir", "List the files and directories under a workspace directory.", DirArgs, list_dir),
    EpisodeTool("glob", "Find workspace files whose path matches a glob pattern.", GlobArgs, glob_files),
    EpisodeTool("grep", "Search workspace files for lines matching a regular expression.", GrepArgs, grep),
)
