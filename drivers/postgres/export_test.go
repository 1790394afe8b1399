package postgres

// Migrations are the schema's migrations, for the tests that make a
// database of an older version.
var Migrations = migrations
