package sqlite

// MigrationsForTest returns the schema migrations, to build a database of
// an older version.
func MigrationsForTest() [][]string { return migrations }
