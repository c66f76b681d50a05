# -*- coding: utf-8 -*-
# Copyright: metnos-sandbox-ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnostic codes of manifests and profiles: the loader's limits, scopes and grants, the invariants of a
rendered profile, the mount model.

The codes of the profile/ package's checks, kept on the ground floor (base/ imports nothing above it): data
only, importing base/registry.py alone; base/diagnostics.py gathers every codes_*.py's CODES into the one
registry (docs/diagnostics.md is generated from it). Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, annotations, division, print_function

from typing import List

from .registry import (
    ERROR,
    INFO,
    JUDGED,
    REFUSED,
    SANDBOX_ACTIVE,
    WARNING,
    Code,
)

CODES: List[Code] = []
CODES.extend([
    # ---- manifests and profiles (R-CAP-*, R-ARG-1, R-SEC-*) ----
    Code(code="manifest_parse_error", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest cannot be read",
         cause="The manifest file is unreadable, or not valid YAML/JSON.",
         detection="Loading the manifest.",
         remediation=["python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' '<manifest>'"],
         messages={"no_yaml": "YAML needs PyYAML on this host; give the manifest as JSON (or render it through the "
                              "role, which parses it on the controller)",
                   "syntax": "not valid YAML/JSON: {problem}{at}",
                   "alias": "undefined alias *{anchor}",
                   "not_path": "manifest file: {where} is not a path",
                   "unreadable": "{where}: cannot read: {error}",
                   "not_regular": "{where}: not a regular file",
                   "not_text": "{where}: a manifest is text, got {type}"},
         hint=("Check the file named in the message: the command says where it stops being valid YAML or "
               "JSON.")),
    Code(code="manifest_missing", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest file does not exist",
         cause="The manifest file named by the task does not exist on the host that reads it.",
         detection="Opening the manifest file.",
         remediation=["ls -l '<manifest>'"],
         messages={"unreadable": "{where}: cannot read: {error}"},
         hint=("Check the path (manifest_file, or metnos_sandbox_manifests); a manifest file is read on the host "
               "that renders it.")),
    Code(code="manifest_link_refused", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is reached through a link someone else controls",
         cause="A component of the manifest's path, below a folder that a user other than root can write, is a "
               "symbolic link: root reads nothing through a link it did not choose (issue 49).",
         detection="Opening the path component by component without following links (openat2 RESOLVE_NO_SYMLINKS|"
                   "RESOLVE_BENEATH, or O_NOFOLLOW per component) from the first folder root does not control alone.",
         remediation=["rm -- {file}"],
         messages={"": "{where}: {file} is a symbolic link in a folder {owner} can write (it points to a file "
                       "owned by {target_owner}); root does not follow it"},
         hint="Remove the link and put the manifest itself there (a regular file), or name a path in a folder "
              "root owns."),
    Code(code="manifest_fifo", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is a FIFO",
         cause="The manifest's path names a FIFO (named pipe): it is refused at once, never "
               "waited on.",
         detection="fstat of the file opened O_NONBLOCK.",
         remediation=["rm -- {file}"],
         messages={"": "{where}: {file} is {kind}, owned by {owner}; root does not wait on it"},
         hint="Remove it and put the manifest there as a regular file."),
    Code(code="manifest_unreadable_by_owner", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is a file its folder's owner could not read",
         cause="The manifest is in a folder a user other than root controls, and that user could not read the file "
               "(its owner, group and mode): root does not read it for them (a hard link to a root-only file).",
         detection="The file's fstat judged as the folder's owner would see it (owner, groups, mode bits).",
         remediation=["rm -- {file}"],
         messages={"": "{where}: {owner} controls the folder of {file} but could not read it (owned by "
                       "{target_owner}); root does not read it for them"},
         hint="Remove it from that folder; a real manifest belongs in a folder root owns, or is readable by the "
              "folder's owner."),
    Code(code="manifest_changed_while_read", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest changed while it was read",
         cause="The manifest's size, times or inode changed between the fstat before and after the one read (or it had "
               "just changed): a half-written file is never rendered. Render again.",
         detection="fstat before and after reading the file once (size, mtime, ctime, inode), again after a short "
                   "settle time for a file that had just changed.",
         remediation=["ls -l --time-style=full-iso -- {file}"],
         messages={"": "{where}: {file} changed while read: render again (owned by {owner})"},
         hint="Render again once nothing is writing the file (the command shows whether it still changes)."),
    Code(code="manifest_not_utf8", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is not UTF-8 text",
         cause="The manifest contains bytes that are not valid UTF-8, or a NUL byte.",
         detection="Decoding the file as UTF-8.",
         remediation=["iconv -f <encoding> -t UTF-8 <manifest> > <manifest>.utf8", "mv <manifest>.utf8 <manifest>"],
         messages={"byte": "{where}: byte {byte} is not valid UTF-8 ({reason}); manifests are UTF-8 text",
                   "surrogates": "{where}: contains lone surrogates; manifests are UTF-8 text",
                   "nul": "{where}: contains a NUL byte"},
         hint="Re-export the manifest as UTF-8 (<encoding> is the one it was written in)."),
    Code(code="manifest_invalid", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="A manifest field is invalid",
         cause="A required field is missing, a field has the wrong type, or an unknown field is present.",
         detection="Strict validation of every manifest field.",
         remediation=["ls examples/manifests/", "\"${EDITOR:-vi}\" <manifest>"],
         messages=dict(REFUSED, **{
             "number_range": "the number {number} is out of range",
             "path_number_range": "{field}: the number is out of range",
             "path_key": "{field}: the key {key} is not a string",
             "not_data": "{field}: a {type} is not manifest data (mappings, lists, strings, numbers, booleans)"}),
         hint="Fix the field named in the message; examples/manifests/ holds valid manifests."),
    Code(code="capability_unknown", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="Unknown capability",
         cause="The capability is not in the closed grammar; an unknown capability is never rendered.",
         detection="Parsing every capability against the closed set of forms.",
         remediation=["ansible-doc metnos.sandbox.sandbox_profile"],
         messages=REFUSED,
         hint=("Use one of the accepted forms listed in the message (the module's documentation lists them).")),
    Code(code="capability_whitespace", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="Whitespace inside a capability",
         cause="A capability is one word. Whitespace between two of its words is two capabilities run together - a "
               "list item indented deeper than the one before it continues that item's text in YAML, so "
               "'- fs:read:/srv/notes/**' then '   - net:http' is the one string 'fs:read:/srv/notes/** - net:http' "
               "and net:http would be lost - or a line break or a space inside a path; it is never read as one "
               "capability.",
         detection="Each capability's text, before the grammar; for YAML, each item of the capabilities list as it is "
                   "read (naming the lines it spans).",
         remediation=['python3 -c \'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["capabilities"])\' '
                      '\'<manifest>\''],
         messages={"list_item": "{field}{at}: {value} holds ' - ': two list items run together (align each "
                                "'- ' item of capabilities under the first)",
                   "line_break": "{field}{at}: {value} holds a line break: a capability is one word on one line",
                   "space": "{field}{at}: {value} holds whitespace: a capability is one word (a path with a "
                            "space cannot be granted)"},
         hint=("Write one capability per '- ' line, each aligned under the first; the command "
               "prints the capabilities as YAML reads them.")),
    Code(code="capability_reserved", severity=ERROR, rule="R-SEC-5", section=SANDBOX_ACTIVE,
         title="A reserved capability was requested",
         cause="system:undo belongs to the byte-pinned undo_last_turn broker only.",
         detection="Any manifest other than the pinned undo broker declaring system:undo.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"not_broker": "{executor} declares system:undo, reserved for the pinned {broker} broker (R-SEC-5)"},
         hint="Remove system:undo from the manifest."),
    Code(code="scope_relative", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A path scope is relative",
         cause="Fixed scopes must be absolute paths or globs.",
         detection="Lexical check of each fs: scope.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=REFUSED,
         hint="Write the scope as an absolute path, e.g. fs:read:/srv/metnos/data/**"),
    Code(code="scope_nul", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A path contains NUL or control characters",
         cause="NUL bytes and control characters are never valid in a path scope or argument path.",
         detection="Lexical check of each scope and argument value.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=dict(REFUSED, **JUDGED,
                       arg="{field}: {value} contains NUL, control or format characters (R-ARG-1)"),
         hint="Remove the control characters from the scope or argument."),
    Code(code="scope_not_normalized", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="A path scope is not normalised",
         cause="'.', '..' or '//' in a scope hide what it really grants.",
         detection="Lexical check of each scope.",
         remediation=["realpath -m <path>", "\"${EDITOR:-vi}\" <manifest>"],
         messages=dict(REFUSED, arg="{field}: {value} has a '.' or '..' component, '//' or a trailing '/': the "
                                    "kernel resolves '..' after the symbolic link before it, text would collapse it "
                                    "before (R-ARG-1)"),
         hint="Write the normalised absolute path (the first command prints it) instead."),
    Code(code="scope_too_broad", severity=ERROR, rule="R-SEC-2", section=SANDBOX_ACTIVE,
         title="A scope is too broad",
         cause="The scope's root (after glob reduction) is '/', a system tree, or a shared tree such as /opt "
               "or /home; rendering it would expose or make writable far more than one executor needs.",
         detection="Glob reduction to the root, then comparison with the broad and system trees.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=JUDGED,
         hint="Narrow the scope to the executor's own folder, e.g. fs:write:/var/lib/metnos/<executor>/**"),
    Code(code="arg_undeclared", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="An arg: scope names an undeclared argument",
         cause="fs:*:arg:<name> refers to an argument the manifest does not declare.",
         detection="Cross-check of capabilities and arguments.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=REFUSED,
         hint="Declare the argument under 'arguments' with its 'within' scopes, or fix the name."),
    Code(code="arg_scope_unbounded", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="A path argument has no bounding scope",
         cause="An argument used as a path scope must declare the scopes it may narrow ('within'); "
               "otherwise the argument could widen the sandbox.",
         detection="Each argument used by an arg: scope has a non-empty 'within'.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=REFUSED,
         hint="Add within: [/the/allowed/root/**] to the argument's declaration."),
    Code(code="arg_escapes_scope", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="An argument value escapes its declared scope",
         cause="The argument's path, once '..' is resolved, is outside every 'within' scope: an argument may "
               "narrow a capability, never widen it. A 'within' scope written as a glob is a pattern: the value "
               "must be at or below a path it matches (with 'within: [/srv/notes/*.md]' the folder /srv/notes "
               "itself is outside).",
         detection="Normalisation of the value, then containment in the declared roots and a match of the glob "
                   "below them ('**' any number of components, '*' '?' '[...]' within one, '{a,b}' alternatives; "
                   "a pattern with more than 64 alternatives or 65,536 matching steps matches nothing).",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"outside": "{field}={value} resolves to {path}, outside the declared scope {within} (R-ARG-1: "
                              "narrow, never widen)",
                   "outside_hard": "{field}={value} resolves to {path}, outside the declared scope {within} (R-ARG-1: "
                                   "narrow, never widen) (a pattern with more than {alternatives} brace alternatives, "
                                   "or that needs more than {steps} steps to match, matches nothing)"},
         hint="Pass a path inside the declared scope, or change the manifest's declared scope (re-signing it)."),
    Code(code="arg_symlink_escapes", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="An argument value leads out of its scope through a symlink",
         cause="The argument's path is inside the scope lexically but a symlink on it resolves outside (or to a "
               "path the 'within' pattern does not match).",
         detection="realpath() of the value, then containment in the realpath of the declared roots and the same "
                   "pattern match below them.",
         remediation=["readlink -f <path>"],
         messages={"symlink": "{field}={value}: {path} leads through a symlink to {real}, outside {inside} (R-ARG-1)"},
         hint="Pass the real path (the command prints it), or remove the symlink that points outside the scope."),
    Code(code="arg_value_invalid", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="An argument value is not a usable path",
         cause="The argument value is not a string, is empty, or contains control characters.",
         detection="Type and lexical checks of the invocation's argument values.",
         remediation=[],
         messages={"not_path": "{field}: {value} is not a path string (non-empty, at most {limit} characters, no '~' "
                               "expansion) (R-ARG-1)"},
         hint="Pass the argument as a non-empty path string."),
    Code(code="metnos_resource_unknown", severity=ERROR, rule="R-CAP-METNOS", section=SANDBOX_ACTIVE,
         title="Unknown Metnos resource",
         cause="metnos:* capabilities name a closed set of semantic resources; this one is not in it.",
         detection="Lookup in the resource map of the host context.",
         remediation=["\"${EDITOR:-vi}\" <host_vars_file>"],
         messages={"unknown": "{capability}: unknown resource {resource}; known: {known} (R-CAP-METNOS)"},
         hint="Use a known resource (listed in the message) or add it to metnos_sandbox_resources."),
    Code(code="undo_exception_mismatch", severity=ERROR, rule="R-FAIL-2", section=SANDBOX_ACTIVE,
         title="undo_last_turn does not match the pinned exception",
         cause="A manifest named undo_last_turn differs from the byte-pinned exception (name, origin, revision, "
               "owner, capability, file list, entrypoint (the file that runs unsandboxed, main.py unless pinned), "
               "or the digest computed from the broker's files on disk). A later "
               "revision does not inherit the exception: it fails closed.",
         detection="Exact comparison with the pinned exception of the host context; the digest is computed from the "
                   "executor's files on disk, never taken from the manifest alone.",
         remediation=["\"${EDITOR:-vi}\" <host_vars_file>"],
         messages={"fields": "{executor} (revision {revision}) does not match the pinned exception on: {mismatched}. "
                             "It fails closed (R-FAIL-2)",
                   "digest": "{executor}: the digest computed from the files on disk in {folder} is {computed}, not "
                             "the pinned {pinned}. It fails closed (R-FAIL-2)"},
         hint=("Pin the reviewed revision in metnos_sandbox_host.undo_exception: name, origin, revision, owner, "
               "capability, files and the digest the message shows (computed from disk); or restore the reviewed "
               "broker.")),
    # ---- input limits: a manifest is data, bounded before it is interpreted (docs/profile-invariants.md) ----
    Code(code="manifest_too_large", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is larger than the limit",
         cause="The manifest text is larger than {limit} bytes (a real manifest is a few hundred bytes).",
         detection="Size of the file (fstat) or text, before it is decoded.",
         remediation=["ls -l <manifest>"],
         messages={"size": "{where}: {size} bytes is larger than the {limit}-byte limit for a manifest"},
         hint="Check that the right file is given; a manifest lists capabilities, not data."),
    Code(code="manifest_too_many_nodes", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest has too many YAML/JSON nodes",
         cause="The manifest has more than {limit} nodes, counting every YAML alias as the nodes it expands "
               "to (counted before anything is expanded), or an alias refers to itself.",
         detection="Counting events while composing the document, aliases by their anchor's expanded size.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"yaml": "more than {limit} YAML nodes (aliases counted as the nodes they expand to)",
                   "self_alias": "the alias *{anchor} refers to itself (infinite expansion)",
                   "nodes": "more than {limit} nodes"},
         hint="Write the manifest without anchors and aliases, listing each value once."),
    Code(code="manifest_too_deep", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest is nested too deeply",
         cause="Mappings and lists are nested more than {limit} levels deep.",
         detection="Nesting depth while composing the document.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"interpreter": "nested deeper than the interpreter can parse (limit {limit})",
                   "yaml": "nested too deeply",
                   "levels": "nested more than {limit} levels deep",
                   "path_levels": "{field}: nested more than {limit} levels deep"},
         hint="A manifest needs at most five levels (manifest > arguments > name > within > scope)."),
    Code(code="manifest_duplicate_key", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="A key appears twice in one mapping",
         cause="The same key appears twice in one YAML/JSON mapping. YAML and JSON loaders usually keep the last "
               "one silently, so a reviewer and the renderer could read two different manifests.",
         detection="Duplicate detection while composing each mapping.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"json_key": "key {key} appears twice in one mapping",
                   "yaml_key": "the key {key} appears twice in one mapping"},
         hint="Keep one occurrence of the key named in the message."),
    Code(code="manifest_yaml_unsupported", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest uses a YAML feature that is not accepted",
         cause="Explicit tags, merge keys ('<<'), non-string keys, several documents, or YAML 1.1 number forms "
               "(octal, hexadecimal, sexagesimal) that silently change a value.",
         detection="The closed set of YAML features accepted while composing the document.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"documents": "a manifest is one YAML document",
                   "alias_key": "an alias cannot be a mapping key",
                   "key_type": "the key {key} is not a string (quote it)",
                   "merge": "YAML merge keys ('<<') are not accepted",
                   "key_anchor": "anchors on keys are not accepted",
                   "explicit_tag": "the explicit YAML tag {tag} is not accepted (plain strings, numbers, booleans, "
                                   "null, lists and mappings only)",
                   "tag": "the YAML tag {tag} is not accepted (plain strings, numbers, booleans, null, lists and "
                          "mappings only)",
                   "not_number": "{number} is not a number",
                   "yaml11_number": "{number} is a YAML 1.1 number form (octal, hex, sexagesimal, digit separators) "
                                    "that changes its value; quote it",
                   "collection_tag": "the YAML tag {tag} is not accepted",
                   "collection_key": "a mapping key must be a string, not a collection"},
         hint="Write plain mappings, lists and quoted strings; quote values such as revisions."),
    Code(code="manifest_string_too_long", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="A string in the manifest is longer than the limit",
         cause="A key or string value is longer than {limit} characters.",
         detection="Length of every key and string while checking the document.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"length": "{field}: a string of {length} characters is longer than the {limit}-character limit"},
         hint="Shorten the value named in the message."),
    Code(code="manifest_control_character", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="A manifest string contains control characters",
         cause="A string field contains a control, format or line-separator character (C0/C1 controls, "
               "bidirectional overrides, zero-width characters, lone surrogates): what a reviewer sees would "
               "not be what is granted.",
         detection="Every string field is matched against its grammar; control and format characters never match.",
         remediation=["cat -A <manifest>", "\"${EDITOR:-vi}\" <manifest>"],
         messages=REFUSED,
         hint="Remove the invisible characters (the first command shows them)."),
    Code(code="manifest_too_many_capabilities", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="The manifest declares too many capabilities",
         cause="More than {limit} capabilities are declared.",
         detection="Length of the capabilities list, before any capability is parsed.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"count": "{field}: {count} capabilities; the limit is {limit}"},
         hint="Split the executor or use glob scopes; a real executor needs a handful of capabilities."),
    Code(code="capability_too_long", severity=ERROR, rule="R-SCOPE-1", section=SANDBOX_ACTIVE,
         title="A capability is longer than the limit",
         cause="A capability string is longer than {limit} characters.",
         detection="Length of each capability string, before it is parsed.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"length": "{field}: {value} is {length} characters long; the limit is {limit}"},
         hint="Shorten the scope path of the capability named in the message."),
    Code(code="manifest_too_many_arguments", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="The manifest declares too many arguments",
         cause="More than {limit} arguments are declared.",
         detection="Length of the arguments mapping, before any argument is checked.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"count": "{field}: {count} arguments; the limit is {limit}"},
         hint="Declare only the arguments used as path scopes."),
    Code(code="manifest_too_many_scopes", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="An argument declares too many 'within' scopes",
         cause="An argument lists more than {limit} 'within' scopes.",
         detection="Length of each 'within' list.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"count": "{field}: {count} scopes; the limit is {limit}"},
         hint="Use fewer, narrower scopes."),
    Code(code="manifest_too_many_files", severity=ERROR, rule="R-FAIL-2", section=SANDBOX_ACTIVE,
         title="The manifest lists too many files",
         cause="The 'files' list has more than {limit} entries.",
         detection="Length of the 'files' list.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"count": "{field}: {count} files; the limit is {limit}"},
         hint="List only the executor's own files."),
    Code(code="manifest_containment_unknown", severity=ERROR, rule="R-SCOPE-4", section=SANDBOX_ACTIVE,
         title="A manifest names an unknown minimum containment level",
         cause="min_containment names the weakest containment a paired device may run the executor at (R-SCOPE-4: no "
               "silent downgrade); a value that is not one of the levels would let a client guess, so the manifest is "
               "refused.",
         detection="Matching min_containment whole against the levels bubblewrap, appcontainer, job_object, none.",
         remediation=["grep -n min_containment '<manifest>'"],
         messages=REFUSED,
         hint=("Set min_containment to one of the levels the message lists (appcontainer: no Job Object fallback "
               "on Windows; none: no minimum), or remove the field.")),
    Code(code="invocation_invalid", severity=ERROR, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="The invocation is not usable",
         cause="The invocation is not a mapping of arguments, turn_id and sender, has unknown keys, or has "
               "too many argument values.",
         detection="Type, key and size checks of the invocation before rendering.",
         remediation=[],
         messages={"not_mapping": "invocation: {value} is not a mapping",
                   "unknown_key": "invocation: unknown key {key}; accepted: arguments, turn_id, sender",
                   "arguments": "invocation.arguments: {value} is not a mapping of at most {limit} values"},
         hint="Pass invocation: {arguments: {name: value}, turn_id: <id>, sender: <name>}."),
    # ---- resolved paths and the invariants of a rendered profile (docs/profile-invariants.md) ----
    Code(code="scope_reserved_tree", severity=ERROR, rule="R-BASE-4", section=SANDBOX_ACTIVE,
         title="A scope reaches a tree reserved to another grant",
         cause="The scope is at, below or above a tree that only its own capability may reach: the executors "
               "folder (every executor's code), the integrations folder, the mail credential store, the dialog "
               "folder or the undo root. Granting it would expose every sibling (other executors, accounts, "
               "senders or turns).",
         detection="Resolved scope compared with the resolved reserved trees of the host context.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=JUDGED,
         hint=("Use the capability made for that resource (provider:access, mail:read, dialog.user_input, the "
               "inverse model) instead of an fs: scope.")),
    Code(code="scope_symlink_refused", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A scope leads through a symlink to a refused tree",
         cause="The scope's text passes the checks but its fully resolved form on this host (every symlink "
               "followed, e.g. /var/run -> /run, /lib -> usr/lib, a link into /etc) is refused by the same rules. "
               "The mount would have exposed the symlink's target.",
         detection="os.path.realpath() of the scope on the host that renders, then the same refusal rules.",
         remediation=["readlink -f <path>"],
         messages={"symlink": "{field}: {access} {path} resolves through a symlink to {real}: {problem}"},
         hint=("Replace the symlink by a real directory, or declare the real path (the command prints it) if it is "
               "acceptable.")),
    Code(code="scope_mount_alias", severity=ERROR, rule="R-BASE-4", section=SANDBOX_ACTIVE,
         title="A scope reaches a refused tree through a bind mount",
         cause="The scope is at, below or above a folder that is a refused tree mounted again under another "
               "path: the Metnos install on a data disk bind-mounted at its configured path (fstab "
               "'/data/metnos /srv/metnos none bind'), /etc or a part of it mounted for a backup or a "
               "container, a bind of /, /proc or /run. realpath cannot see bind mounts, so the path passes "
               "every rule as written and resolved, while the mount would expose the tree (or make a "
               "read-only one writable).",
         detection="/proc/self/mountinfo of the host that renders: every mount's filesystem and root give each "
                   "refused tree's aliases (every path showing the same folder, or a part of it); the scope is "
                   "then judged against them with the same rules. The final check does the same on the argv.",
         remediation=["findmnt -o TARGET,SOURCE"],
         messages=JUDGED,
         hint=("Declare the path under its configured name if it is acceptable, or remove the bind mount (the "
               "command lists them).")),
    Code(code="scope_special_file", severity=ERROR, rule="R-CAP-FS", section=SANDBOX_ACTIVE,
         title="A scope is a socket, a FIFO or a device node",
         cause="A fixed scope, the root of a glob, a 'within' scope or an argument value resolves to a Unix "
               "socket, a FIFO or a device node. A bind mount does not make these read-only in any useful "
               "sense: through a read-only bind the sandbox can still connect to a socket and send commands "
               "to the host process behind it (a container engine, systemd, an agent) or write into a FIFO. "
               "Only plain files and folders are granted.",
         detection="stat() of the fully resolved path on the host that renders (after the symlink rules); the "
                   "final check refuses any bind whose source is one, except the admin's systemd/system read paths.",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages={"special": "{field}: {access} {path} is {kind}; only files and folders are granted (R-CAP-FS)",
                   "special_real": "{field}: {access} {path} ({real}) is {kind}; only files and folders are granted "
                                   "(R-CAP-FS)"},
         hint=("Declare the folder or file the executor really needs; reach host services through their own "
               "capability (systemd:read, system:read, provider:access).")),
    Code(code="scope_hard_link", severity=ERROR, rule="R-BASE-4", section=SANDBOX_ACTIVE,
         title="A file scope has several names (hard links)",
         cause="A fixed scope or an argument value resolves to a regular file whose link count is above one. "
               "A hard link is the same file under another name, and realpath cannot tell where the other "
               "names are: writing it may write a file of a read-only base tree (the runtime, /etc), and "
               "reading it may read a reserved one (a mail credential file). Files inside a granted folder "
               "are not examined (the bind is the whole tree).",
         detection="os.stat() of the fully resolved path: a regular file with st_nlink > 1; the final check "
                   "refuses any writable bind of one.",
         remediation=["find / -xdev -samefile <path>"],
         messages={"hard_link": "{field}: {access} {path} is a file with several names (hard links): its other names "
                                "may be in a read-only or reserved tree, which realpath cannot see (R-BASE-4, R-ARG-1)",
                   "hard_link_real": "{field}: {access} {path} ({real}) is a file with several names (hard links): its "
                                     "other names may be in a read-only or reserved tree, which realpath cannot see "
                                     "(R-BASE-4, R-ARG-1)"},
         hint="Grant the folder the file lives in, or give the file a single name (the command lists its names)."),
    Code(code="scope_runtime_tree", severity=ERROR, rule="R-CAP-SYS", section=SANDBOX_ACTIVE,
         title="A scope is at, below or above /run (the host daemons' sockets)",
         cause="/run (and its alias /var/run) holds the sockets of the host's daemons: systemd, D-Bus, "
               "container engines, user sessions. A read-only bind of any of it still lets the sandbox talk "
               "to them. Manifest-written paths (scopes, 'within' scopes, argument values) may not reach it, "
               "as written or resolved; host state is read through systemd:read / system:read, whose paths "
               "the admin configures (metnos_sandbox_host.systemd_read_paths, system_read_paths).",
         detection="The scope as written and fully resolved, at, below or above /run or /var/run (resolved too).",
         remediation=["\"${EDITOR:-vi}\" <manifest>"],
         messages=JUDGED,
         hint=("Use systemd:read or system:read and configure the needed paths in the host context; keep executor "
               "data out of /run.")),
    Code(code="host_path_refused", severity=ERROR, rule="R-BASE-4", section=SANDBOX_ACTIVE,
         title="A host-context path cannot be mounted safely",
         cause="A path of the host context (the Metnos install's real paths: runtime, Python prefix and package "
               "roots, executors, i18n/lexicon databases, resources, indexes, integrations, credentials, "
               "dialog, undo) resolves to a tree that would expose or make writable more than its grant: a "
               "shared root, /proc or /dev, a reserved tree, a read-only base tree made writable, or it leaves "
               "its folder through a symlink.",
         detection="os.path.realpath() of each host path at render time, then the same refusal rules as for scopes.",
         remediation=["\"${EDITOR:-vi}\" <host_vars_file>"],
         messages={"host_key": "host.{host_key} = {path}: {problem}",
                   "mount_table": "{path} is larger than {limit} bytes: the bind mounts that alias a refused tree "
                                  "cannot all be seen, so no profile is rendered"},
         hint="Fix the host key named in the message (metnos_sandbox_host) to the real, dedicated path."),
    Code(code="profile_invariant_violated", severity=ERROR, rule="R-SEC-1", section=SANDBOX_ACTIVE,
         title="A rendered profile broke an invariant and was withheld",
         cause="The final check of the rendered mounts and flags found a writable mount outside every declared, "
               "resolved scope, a read-only base tree writable or shadowed, a flag no rule grants, or a mount "
               "out of canonical order. The profile is refused (fail closed); this is a defect of the renderer "
               "or a filesystem that changed while rendering.",
         detection="An independent check of the rendered argv against invariants (a)-(d) of "
                   "docs/profile-invariants.md.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"withheld": "{executor}: the rendered profile was withheld: {violated}",
                   "two_sources": "{target} would be mounted from two sources ({first} and {second}, by {by})"},
         hint="Render again; if it persists, report the manifest and host context (the renderer has a bug)."),
    Code(code="device_profile_downgraded", severity=WARNING, rule="R-SCOPE-4", section=SANDBOX_ACTIVE,
         title="A device profile leaves out a flag of the spec's Linux device row, as declared",
         cause="The host is placed as a paired Linux device (metnos_sandbox_placement: device), whose profile is the "
               "server's plus a PID namespace of its own (--unshare-pid) and a session, so a process group, of its own "
               "(--new-session); the admin declared that this platform cannot give one of them "
               "(metnos_sandbox_host.device_downgrades, with the reason). The profile is rendered without it and says "
               "so: a declared downgrade, never a silent one.",
         detection="Rendering a profile with host.placement device and host.device_downgrades.",
         remediation=["ansible '<host>' -m metnos.sandbox.sandbox_probe -a "
                      "'{\"unit\": \"metnos.service\", \"host\": {\"placement\": \"device\"}}'"],
         messages={"": "the device profile leaves out {flag}, as declared: {reason}",
                   "probe": "{check} does not hold without {flag}, declared left out ({reason}): {problems}"},
         hint=("The command probes the full device profile (no downgrade) in the service's context: when it "
               "passes, this platform gives the flag - remove its entry from metnos_sandbox_host.device_downgrades "
               "and render again.")),
    Code(code="network_word_unknown", severity=WARNING, rule="R-NET-1", section=SANDBOX_ACTIVE,
         title="A net: or network: word looks like a typo of a known one",
         cause="A capability net:<what> or network:<what> names a word a typo away from one the toolkit knows "
               "(net:htpp for net:http). A warning, not a refusal: the spec writes net:* and network:* and lists no "
               "words, and network is binary (R-NET-1: any word grants the host network, bwrap applies no allow-list), "
               "so the word is the manifest's own; the profile grants the host network as written.",
         detection="Comparing each net:/network: word with the known words (difflib ratio 0.6 or more, not equal).",
         remediation=["grep -n -e 'net:' -e 'network:' '<manifest>'", "\"${EDITOR:-vi}\" '<manifest>'"],
         messages={"": "{executor}: {capability} is not a network word the toolkit knows: did you mean {meant}? "
                       "(known: {known}); granted as written (the host network)"},
         hint=("Correct the word in the manifest (the first command shows its line), then render the profiles "
               "again. A word of your own is allowed (the spec's net:*): pick one that is not a near miss of a "
               "known word.")),
    Code(code="profile_preview", severity=INFO, rule="R-DIAG-3", section=SANDBOX_ACTIVE,
         title="This profile is a preview rendered off the target host",
         cause="The profile was rendered where the manifest's paths cannot be resolved as the target host sees "
               "them (a filter on the controller): symlinks, existence and base paths are the controller's.",
         detection="Rendered by a controller-side face.",
         remediation=["ansible-playbook metnos.sandbox.site --tags metnos_sandbox_profiles"],
         messages={"preview": "rendered off the target host (controller paths, symlinks and existence); the final "
                              "profile is rendered on the host by metnos.sandbox.sandbox_profile"},
         hint="Render the final profile on the host: the metnos.sandbox.sandbox_profile module (make run)."),
    Code(code="undo_files_invalid", severity=ERROR, rule="R-FAIL-2", section=SANDBOX_ACTIVE,
         title="The pinned undo broker's files cannot be verified",
         cause="The digest of the undo broker is computed from its files on disk; a listed file is missing, not a "
               "regular file, a symlink, too large, or the folder holds files that are not listed.",
         detection="Reading each listed file below the executor's folder without following symlinks.",
         remediation=[],
         messages={"unverified": "{executor}: the broker's files in {folder} cannot be verified: {problem}. It fails "
                                 "closed (R-FAIL-2)"},
         hint="Restore the reviewed broker's files exactly as listed, then pin their digest."),
    Code(code="grant_skipped", severity=INFO, rule="R-ARG-1", section=SANDBOX_ACTIVE,
         title="A grant was not mounted",
         cause="A declared resource does not exist on this host or is not known (unknown index name, missing "
               "argument value, missing mail account, no authenticated sender or turn): nothing is granted.",
         detection="Existence and lookup checks at render time.",
         remediation=[],
         messages={"missing_scope": "{what}: {path} does not exist on this host; not mounted",
                   "missing": "{what}: {path} does not exist; not mounted",
                   "no_arg_value": "{what}: no value for argument {arg} in this invocation; nothing mounted",
                   "missing_arg_path": "{what}={value}: {path} does not exist; not mounted (R-ARG-1)",
                   "unknown_index": "{what}: unknown index {index} grants nothing (R-CAP-INDEX)",
                   "missing_integration": "{what}: integration folder {path} does not exist; not mounted",
                   "no_credential": "{what}: no credential file for account {account}; nothing mounted (R-CAP-MAIL)",
                   "no_sender": "dialog.user_input: no authenticated sender (or an invalid one: {sender}) in the "
                                "invocation; nothing mounted (R-CAP-DIALOG)",
                   "missing_dialog": "dialog.user_input: {path} does not exist; not mounted",
                   "no_turn": "inverse model declared but the turn (turn_id={turn}) is missing or invalid; nothing "
                              "mounted (R-CAP-UNDO)",
                   "missing_turn": "inverse model declared but the turn folder {path} is missing; nothing mounted "
                                   "(R-CAP-UNDO)",
                   "missing_own": "executor folder {path} does not exist; not mounted"},
         hint="Nothing to do if expected; otherwise create the path or fix the name in the message."),
])
