package sshserve

// revokedEnd is how a session ends whose key the authorized keys no
// longer give the identity it opened with.
var revokedEnd = sessionEnd{
	reason: "key no longer authorized",
	message: "lockctl: this key was removed from the server's authorized keys (or its role or actor changed); " +
		"the session is ended",
	status: 1,
}

// endRevoked ends every running session whose key the authorized keys,
// as just re-read, no longer authorize with the session's identity: a
// removed key, a role taken down to viewer, another actor. It runs after
// every re-read that changed them, before the lookup that saw the change
// returns; a session registering meanwhile looks its key up again
// (register).
func (s *Server) endRevoked() {
	s.mu.Lock()
	var revoked []*sessionState
	for st := range s.running {
		if id, ok := s.keys.current(st.key); !ok || id != st.id {
			revoked = append(revoked, st)
		}
	}
	s.mu.Unlock()
	for _, st := range revoked {
		s.cfg.Log.Warn("session ended: key no longer authorized", "actor", st.id.Actor, "role", st.id.Role,
			"fingerprint", st.id.Fingerprint)
		st.end(revokedEnd)
	}
}
