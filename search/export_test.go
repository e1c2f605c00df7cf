package search

// ResetCaches empties the process-wide stem caches and build buffers, so that a
// benchmark measures a cold build.
var ResetCaches = resetCaches
