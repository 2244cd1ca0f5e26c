// Command genschema writes the root schema.sql (store.PsqlScript) to the
// file its argument names: `go generate ./store` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/lockctl/lockctl/store"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genschema FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(store.PsqlScript()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
