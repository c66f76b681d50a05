"""A test's work done in a forked child of its own (a session keyring it joins, a mount namespace it unshares:
nothing of it reaches the test's process), its JSON answer read back on a pipe."""
import json
import os


def answer_of_child(work):
    """Fork; the child runs ``work()`` (in a process of its own: keyrings it joins never reach this one) and sends
    its JSON answer on a pipe; the answer, read back once the child exits 0 (any exception in the child exits 1)."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(reading)
            os.write(writing, json.dumps(work()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    data = b""
    while True:
        chunk = os.read(reading, 65536)
        if not chunk:
            break
        data += chunk
    os.close(reading)
    assert os.waitpid(pid, 0)[1] == 0
    return json.loads(data)
