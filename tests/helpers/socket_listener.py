"""A host process behind a Unix socket, the way a daemon's control socket (a container engine, systemd, a bus)
looks to a sandbox: it records every token that reaches it, so a test can prove from outside what got through."""
import os
import socket
import threading


class Listener(object):
    """A listening Unix socket at ``path`` (mode 0777) that records what each connection sends."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o777)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.got = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(5)
            try:
                self.got.append(conn.recv(256).decode())
            except OSError:
                pass
            conn.close()

    def reached(self, token):
        for _ in range(100):
            if token in self.got:
                return True
            threading.Event().wait(0.05)
        return False

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.sock.close()
