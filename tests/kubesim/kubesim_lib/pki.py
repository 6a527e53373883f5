"""The test cluster's PKI, made with the openssl CLI at start: a CA, a server certificate
for 127.0.0.1/::1/localhost, and a client certificate for the admin user."""
import os
import subprocess


def _run(args):
    subprocess.run(["openssl"] + args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_pki(state):
    ca_key, ca_crt = os.path.join(state, "ca.key"), os.path.join(state, "ca.crt")
    _run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", ca_key, "-out", ca_crt, "-days", "2", "-subj", "/CN=kubesim-ca"])
    ext = os.path.join(state, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:kubernetes.default.svc\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
    pairs = {}
    for name, subj, extfile in (("server", "/CN=kubesim", ext),
                                ("client", "/O=system:masters/CN=kubesim-admin", None)):
        key, csr, crt = (os.path.join(state, name + s) for s in (".key", ".csr", ".crt"))
        _run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", key, "-out", csr, "-subj", subj])
        args = ["x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
                "-out", crt, "-days", "2"]
        if extfile:
            args += ["-extfile", extfile]
        else:
            cext = os.path.join(state, "client.ext")
            with open(cext, "w") as f:
                f.write("extendedKeyUsage=clientAuth\n")
            args += ["-extfile", cext]
        _run(args)
        pairs[name] = (crt, key)
    return ca_crt, pairs["server"], pairs["client"]
