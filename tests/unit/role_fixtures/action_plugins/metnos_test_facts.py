# Test-only action (tests/unit/role_fixtures): returns its `facts` argument as ansible_facts, so
# a play on this Debian machine presents itself as Fedora, EL, Arch... to the bwrap_host role.
# An action plugin, not a module: it runs on the controller, nothing is shipped per case.
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(changed=False, ansible_facts=dict(self._task.args["facts"]))
        return result
