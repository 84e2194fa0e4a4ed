package fence

// RecordKey is recordKey, for the tests.
var RecordKey = recordKey
