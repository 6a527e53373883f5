//go:build tools

// The kpt catalog functions this module pins (docs/testing.md, "Real functions"): built by
// scripts/build-peers.sh fn-catalog into the images tests/realkube/images.py makes.
package tools

import (
	_ "github.com/kptdev/krm-functions-catalog/functions/go/set-namespace"
	_ "github.com/kptdev/krm-functions-catalog/functions/go/starlark"
)
