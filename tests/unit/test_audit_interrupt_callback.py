# -*- coding: utf-8 -*-
"""The Ctrl-C callback (issue 52) hears the report task's result however Ansible calls it: v2_runner_on_failed is
called with ``ignore_errors`` (seen in a real run: "finished() got an unexpected keyword argument 'ignore_errors'",
and the failed report task was not marked written). The callback is the real class; the result is a stand-in
holding only the task, since a TaskResult needs a whole running play."""
import types

import pytest

from ansible_collections.metnos.sandbox.plugins.callback.audit_interrupt import CallbackModule

REPORT = types.SimpleNamespace(action="metnos.sandbox.metnos_audit_report")
OTHER = types.SimpleNamespace(action="ansible.builtin.debug")


@pytest.mark.parametrize("call", [
    lambda cb, res: cb.v2_runner_on_ok(res),
    lambda cb, res: cb.v2_runner_on_failed(res),
    lambda cb, res: cb.v2_runner_on_failed(res, ignore_errors=True),
    lambda cb, res: cb.v2_runner_on_failed(res, ignore_errors=False),
])
def test_the_report_tasks_result_marks_the_reports_written(call):
    callback = CallbackModule()
    call(callback, types.SimpleNamespace(_task=OTHER))
    assert callback.reported is False
    call(callback, types.SimpleNamespace(_task=REPORT))
    assert callback.reported is True
