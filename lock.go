package main

import "errors"

// errServing: a serve holds the data directory.
var errServing = errors.New("another oncegate serve is already running on this data directory")

// lockFile is the file in the data directory that serve holds locked.
const lockFile = "serve.lock"
