# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option validation shared by the modules: clear messages naming the option."""
from __future__ import absolute_import, annotations, division, print_function

import re
from typing import Any, Dict, Optional


class OptionError(ValueError):
    """A module option has a bad value; the message names the option."""


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def path_string(option: str, value: Any, default: Optional[str] = None) -> Optional[str]:
    """A PATH-like string: str, no NUL byte, no newline."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise OptionError("%s must be a string like '/usr/local/bin:/usr/bin', got %s %r"
                          % (option, type(value).__name__, value))
    if "\0" in value or "\n" in value:
        raise OptionError("%s must not contain NUL bytes or newlines" % option)
    return value


def environment(option: str, value: Any, default: Optional[Dict[str, str]] = None) -> Optional[Dict[str, str]]:
    """A dict of environment variables with string names and string values."""
    if value is None:
        return default
    if not isinstance(value, dict):
        raise OptionError("%s must be a dict of NAME: value, got %s" % (option, type(value).__name__))
    out = {}
    for key, val in value.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise OptionError("%s: %r is not a valid environment variable name (letters, digits "
                              "and _, not starting with a digit)" % (option, key))
        if not isinstance(val, str):
            raise OptionError("%s: the value of %s must be a string, got %s %r (quote it in YAML: "
                              "%s: \"%s\")" % (option, key, type(val).__name__, val, key, val))
        if "\0" in val:
            raise OptionError("%s: the value of %s contains a NUL byte" % (option, key))
        out[key] = val
    return out
