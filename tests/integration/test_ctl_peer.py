# SPDX-License-Identifier: MIT
"""The control socket refuses other users (doc/operations.md "The control
channel"): its mode 0600 keeps them from connecting, and the server's
SO_PEERCRED check refuses them when the mode has been loosened.  The
client runs as `nobody` through setpriv, which needs root: without it this
exits 77 (skipped, never passed).
"""
import os
import pwd
import sys

from harness import main
from test_ctl import CtlTestCase, ctl, new_server


class OtherUser(CtlTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = new_server().start()
        os.chmod(cls.server.dir, 0o711)   # nobody may reach the socket's name, no more

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_mode_refuses_another_user(self):
        path = self.server.path("control.sock")
        self.fails(ctl(None, "status", user="nobody", socket_path=path),
                   "permission denied: %s (only the server's user and root may use it)" % path)

    def test_peer_uid_refused_when_the_mode_is_loosened(self):
        path = self.server.path("control.sock")
        os.chmod(path, 0o666)
        try:
            self.fails(ctl(None, "site-drain", "paris", user="nobody", socket_path=path),
                       "permission denied: only the server's user and root may use this socket")
            uid = pwd.getpwnam("nobody").pw_uid
            self.server.wait_log(r"warn: control: refused a connection from uid %d \(pid \d+\): "
                                 r"only uid %d \(the server's\) and root may use %s"
                                 % (uid, os.geteuid(), path))
            # nothing changed, and the owner still gets in
            self.assertIn("site paris health unchecked admin auto",
                          self.ok(ctl(self.server, "status")))
        finally:
            os.chmod(path, 0o600)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: running the client as another user needs root (setpriv)")
        sys.exit(77)
    main()
