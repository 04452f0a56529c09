"""Request bodies: url-encoded forms and multipart/form-data (``cgi`` is gone in 3.13)."""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import parse_qs


@dataclass
class FormData:
    """A parsed form: text fields (last value wins) and uploaded files."""

    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    """Field name -> (file name, content). A file input left empty is absent."""

    def get(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)


def _header_params(raw_headers: bytes) -> Message:
    """Headers of one part, parsed by ``email`` so quoting and RFC 2231 names work."""
    msg = Message()
    for line in raw_headers.decode("utf-8", "replace").split("\r\n"):
        name, sep, value = line.partition(":")
        if sep:
            msg[name.strip()] = value.strip()
    return msg


def parse_form(content_type: str, body: bytes) -> FormData:
    """Parse a POST body of either form encoding; anything else gives an empty form."""
    ctype = _header_params(f"Content-Type: {content_type}".encode())
    kind = ctype.get_content_type()
    form = FormData()
    if kind == "application/x-www-form-urlencoded":
        for key, values in parse_qs(body.decode("utf-8", "replace"),
                                    keep_blank_values=True).items():
            form.fields[key] = values[-1]
    elif kind == "multipart/form-data":
        boundary = ctype.get_param("boundary")
        if isinstance(boundary, str) and boundary:
            _parse_multipart(boundary.encode("latin-1"), body, form)
    return form


def _parse_multipart(boundary: bytes, body: bytes, form: FormData) -> None:
    # Parts sit between "--boundary" lines; the CRLF before each delimiter belongs to it.
    delimiter = b"\r\n--" + boundary
    chunks = (b"\r\n" + body).split(delimiter)
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break  # the closing delimiter
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            continue
        headers = _header_params(head.lstrip(b" \t").removeprefix(b"\r\n"))
        name = headers.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        filename = headers.get_filename()
        if filename is not None:
            if filename or content:
                form.files[name] = (filename, content)
        else:
            form.fields[name] = content.decode("utf-8", "replace")
