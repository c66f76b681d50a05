"""net:<what> / network:<what> words (issue 54): the spec (R-NET-1) writes net:* and network:* and lists no words,
so an unknown word is never refused (network is binary: any word grants the host network); a word a typo away
from a known one (net:htpp) is a network_word_unknown warning with the word it likely meant, never silent.

Each case is a real manifest file on disk, rendered by the sandbox_profile module through Ansible on this host,
as the README renders hello.yml."""
import pytest

from conftest import run_module

HOST = {"python_executable": "/usr/bin/python3"}
# capability -> the did-you-mean the warning names (None: no warning)
CASES = [
    ("net:htpp", "net:http"),          # the canary: the typo
    ("network:dsn", "network:dns"),
    ("net:HTTP", "net:http"),
    ("net:http", None),
    ("network:*", None),
    ("net:grpc", None),                # a word of the manifest's own, near no known one (the spec's net:*)
]


@pytest.mark.rule("R-NET-1")
@pytest.mark.parametrize("capability,meant", CASES, ids=[c for c, _ in CASES])
def test_a_network_word_near_a_known_one_is_a_warning_with_did_you_mean(tmp_path, capability, meant):
    manifest = tmp_path / "typo.yml"
    manifest.write_text("name: typo\norigin: test\ncapabilities: ['%s']\n" % capability)
    res = run_module("metnos.sandbox.sandbox_profile", {"manifest_file": str(manifest), "host": HOST,
                                                        "dest": str(tmp_path / "profiles")})
    assert not res.get("failed") and res["decision"] == "wrapped", res
    assert "--unshare-net" not in res["argv"] and res["network"]["because"] == [capability]
    found = [d for d in res["diagnostics"] if d["code"] == "network_word_unknown"]
    if meant is None:
        assert found == [], found
        return
    (diag,) = found
    assert diag["severity"] == "warning" and "did you mean %s?" % meant in diag["message"], diag
    assert "typo:" in diag["message"] and capability in diag["message"]
