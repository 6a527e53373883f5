//go:build tools

// The kpt catalog's apply-setters, in a module of its own: v0.2.2 (the only tag the module
// proxy serves) is written against an older kyaml fn/framework than the other catalog
// functions' (docs/testing.md, "Real functions").
package tools

import _ "github.com/kptdev/krm-functions-catalog/functions/go/apply-setters"
