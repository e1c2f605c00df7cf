package messages

// MaxEmbedBuilds is maxEmbedBuilds, for the tests.
const MaxEmbedBuilds = maxEmbedBuilds
