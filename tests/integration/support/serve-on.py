#!/usr/bin/python3
"""serve-on.py ADDRESS PORTFILE COMMAND...

Listens on ADDRESS at a port the kernel picks, writes that port to PORTFILE,
then becomes COMMAND with the listener as its standard input and as fd 3
(systemd's socket activation: LISTEN_FDS=1, LISTEN_PID its own pid). The
port is never free between choosing it and serving it, as it would be with
a port found free and then passed to a server that binds it itself.
"""
import os
import socket
import sys

address, portfile, command = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket()
s.bind((address, 0))
s.listen(128)
port = s.getsockname()[1]
# dup2 makes the copies inheritable; 0 first, as the socket may be fd 3.
os.dup2(s.fileno(), 0)
os.dup2(0, 3)
with open(portfile + ".tmp", "w") as f:
    f.write(str(port))
os.rename(portfile + ".tmp", portfile)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execv(command[0], command)
