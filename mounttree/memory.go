package mounttree

// BytesPerHeadEpisode bounds what the mount keeps for each episode of a
// table's head while nothing under it is read: docs/CACHES.md ("Memory of
// the daemon") says what it holds, TestBytesPerHeadEpisode measures it.
const BytesPerHeadEpisode = 1 << 10
