// Package ingest turns files dropped into a staging directory into table
// commits. It is what the mount's write directories (TABLE/ingest/ and
// TABLE/replace/) run on, and it knows nothing about FUSE: the mount only
// stores what users write in a directory on local disk and tells the
// stager which files are open for writing.
//
// A stager watches its directory. An entry is settled when nobody has it
// open for writing and it has not changed for the settle time; entries
// are grouped by base name (NAME.mp4 + NAME.jsonl, or an image folder
// NAME/ + NAME.json), and a group whose parts are all settled is
// committed. Groups that are complete at the same moment go into one
// commit. What cannot be committed gets a NAME.error file beside it, and
// commits nothing; other groups are not held back by it.
//
// Crash safety: before an "add" commit the stager hard-links the group's
// files into its work directory and writes a journal. After a crash the
// journal tells whether that commit landed (its episodes are in the table,
// newer than the journal): then the staged files are removed, else they
// stay staged and commit later. No episode is ever added twice, because
// adding an existing episode is an error in the table itself.
package ingest
