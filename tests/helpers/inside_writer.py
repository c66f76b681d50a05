"""The in-sandbox writer of the real channel and object tests (test_channels_real.py, test_profile_objects_real.py,
test_channel_filesystems_real.py): run inside a rendered bwrap argv by the system's python3 (trees.run_inside hands
it this file's text and a JSON spec in argv[1]), it tries what the spec names and prints one JSON object
{path: what happened}. Stdlib only (the sandbox sees the system's Python).

spec: token (the bytes sent or written), sockets (connect and send), fifos (open non-blocking and write), read
(read the text), write (create or truncate, then write), overwrite (open an existing file r+, write), queues (a
POSIX message queue opened through the bound mqueue filesystem, its message taken with mq_timedreceive).
"""
import json
import os
import socket
import sys

MQ_TIMEDRECEIVE = 243      # x86_64


def send_to_socket(path, token):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(token.encode())
    sock.close()
    return "sent"


def write_to_fifo(path, token):
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, token.encode())
    os.close(fd)
    return "sent"


def read_text(path, _token):
    with open(path) as handle:
        return handle.read()


def write_file(path, token, mode="w"):
    with open(path, mode) as handle:
        handle.write(token)
    return "written"


def overwrite_file(path, token):
    return write_file(path, token, "r+")


def receive_from_queue(path, _token):
    """Open the queue through the bound mqueue filesystem (a path, not mq_open: the sandbox's own IPC namespace has
    no such queue) and take its message with mq_timedreceive on that descriptor."""
    import ctypes
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8192)
    got = libc.syscall(MQ_TIMEDRECEIVE, fd, buf, ctypes.c_size_t(8192), None, None)
    return buf.raw[:got].decode() if got >= 0 else "errno %d" % ctypes.get_errno()


# spec key: (what to do with each path, the answer's prefix when it fails)
ACTIONS = (("queues", receive_from_queue, ""), ("sockets", send_to_socket, ""), ("fifos", write_to_fifo, ""),
           ("read", read_text, "error: "), ("write", write_file, ""), ("overwrite", overwrite_file, ""))


def main(spec):
    out = {}
    for key, action, failed in ACTIONS:
        for path in spec.get(key, []):
            try:
                out[path] = action(path, spec.get("token", ""))
            except OSError as exc:
                out[path] = failed + str(exc)
    return out


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(json.loads(sys.argv[1]))))
