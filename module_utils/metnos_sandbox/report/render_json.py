# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report document as JSON (its versioned schema): one compact line per host inside the document, so it
streams and diffs line by line. Pure Python, no Ansible imports; controller only."""
from __future__ import absolute_import, annotations, division, print_function

import json
from typing import Iterator

from .record import Document


def iter_json(doc: Document) -> Iterator[str]:
    head = dict((k, v) for k, v in doc.items() if k != "hosts")
    text = json.dumps(head, indent=2, sort_keys=True)
    yield text[:text.rindex("}")].rstrip() + ',\n  "hosts": [\n'
    last = len(doc["hosts"]) - 1
    for index, h in enumerate(doc["hosts"]):
        yield "    " + json.dumps(h, sort_keys=True) + (",\n" if index < last else "\n")
    yield "  ]\n}\n"


def to_json(doc: Document) -> str:
    return "".join(iter_json(doc))
