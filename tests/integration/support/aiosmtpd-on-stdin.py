#!/usr/bin/python3
"""Debian's aiosmtpd, as its command line (python3 -m aiosmtpd) builds it:
its SMTP class and Mailbox handler, serving on the listening socket given
as standard input instead of binding one, so the port is never free
between choosing it and serving it.

aiosmtpd-on-stdin.py [-s SIZE] [--tlscert C --tlskey K] [--smtpscert C --smtpskey K]
                     [--auth] MAILDIR

-s is the size limit; --tlscert/--tlskey offer STARTTLS and require it, as
the command line does; --smtpscert/--smtpskey are implicit TLS; --auth
requires AUTH (login "alerts", password "s3cret"; the command line has no
such option); --ready FILE is made once it serves.
"""
import argparse, asyncio, functools, socket, ssl
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
p = argparse.ArgumentParser()
p.add_argument("-s", type=int, default=33554432)
for o in ("tlscert", "tlskey", "smtpscert", "smtpskey"):
    p.add_argument("--" + o)
p.add_argument("--auth", action="store_true")
p.add_argument("--ready", help="a file made once it serves")
p.add_argument("maildir")
a = p.parse_args()
def context(cert, key):
    if not (cert and key):
        return None
    c = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    c.check_hostname = False
    c.load_cert_chain(cert, key)
    return c
def auth(server, session, envelope, mechanism, data):
    ok = isinstance(data, LoginPassword) and data.login == b"alerts" and data.password == b"s3cret"
    return AuthResult(success=ok, handled=False)
kw = dict(data_size_limit=a.s, tls_context=context(a.tlscert, a.tlskey))
if a.tlscert:
    kw["require_starttls"] = True
if a.auth:
    kw.update(authenticator=auth, auth_require_tls=False, auth_required=True)
factory = functools.partial(SMTP, Mailbox(a.maildir), **kw)
async def main():
    sock = socket.socket(fileno=0)
    server = await asyncio.get_running_loop().create_server(
        factory, sock=sock, ssl=context(a.smtpscert, a.smtpskey))
    if a.ready:
        open(a.ready, "w").close()
    async with server:
        await server.serve_forever()
asyncio.run(main())
