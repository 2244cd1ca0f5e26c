package sshserve

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gossh "golang.org/x/crypto/ssh"
)

// loadHostKey reads the server's private key from path, creating an
// Ed25519 key there (and its directory) when the file does not exist, so
// clients see the same host key on every start. The directory is made
// first on purpose: wish, handed a path it cannot write, falls back to a
// fresh ephemeral key each start, and every client then warns of a changed
// host key. created says whether the key is new (the caller logs its
// fingerprint for clients to check).
func loadHostKey(path string) (signer gossh.Signer, created bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := createHostKey(path); err != nil {
			return nil, false, err
		}
		created = true
	}
	if err := checkSecret("host key", path); err != nil {
		return nil, false, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("host key %s: %w", path, err)
	}
	signer, err = gossh.ParsePrivateKey(data)
	if err != nil {
		var missing *gossh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, false, fmt.Errorf("host key %s is protected by a passphrase; the server cannot ask for it: use a key without one", path)
		}
		return nil, false, fmt.Errorf("host key %s: %w", path, err)
	}
	return signer, created, nil
}

// createHostKey writes a new Ed25519 private key to path in OpenSSH's
// format, mode 0600, never over an existing file.
func createHostKey(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("host key directory: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "lockctl host key")
	if err != nil {
		return fmt.Errorf("encode host key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create host key: %w", err)
	}
	if _, err := f.Write(pem.EncodeToMemory(block)); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write host key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("write host key %s: %w", path, err)
	}
	return nil
}
