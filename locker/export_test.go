package locker

// Subscribe is (*Notifier).subscribe, for tests that wait until a Notifier
// is listening.
func Subscribe(n *Notifier, key string) (<-chan struct{}, func()) { return n.subscribe(key) }
