package hooks

// table is a name table held as a list literal. A package-level map
// literal is built by the package's init in every process that links the
// package; a list of constants is laid out by the linker and costs
// nothing until it is read. The tables are short: a scan is as quick as
// hashing.
type table[V any] []struct {
	key string
	val V
}

// lookup returns the value of key.
func (t table[V]) lookup(key string) (V, bool) {
	for _, p := range t {
		if p.key == key {
			return p.val, true
		}
	}
	var zero V
	return zero, false
}
