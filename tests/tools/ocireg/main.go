// ocireg serves go-containerregistry's registry (pkg/registry) over TLS, with its OCI 1.1
// referrers API on: the registry the signature tests use where a registry has that API
// (Debian's docker-registry, distribution 2.8, has none). Content is kept in memory and is
// gone when it exits.
//
//	ocireg -addr 127.0.0.1:5446 -cert server.crt -key server.key
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5446", "listen address")
	cert := flag.String("cert", "", "TLS certificate (PEM)")
	key := flag.String("key", "", "TLS key (PEM)")
	flag.Parse()
	if *cert == "" || *key == "" {
		log.Fatal("ocireg: -cert and -key are required")
	}
	h := registry.New(registry.WithReferrersSupport(true))
	log.Printf("ocireg: serving https://%s (referrers API on)", *addr)
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, h))
}
