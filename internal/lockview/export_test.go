package lockview

// LikePattern is likePattern, for the tests' reference queries.
var LikePattern = likePattern

// EachListedIn is EachListed in windows of size rows, so a test pages
// through a small table.
var EachListedIn = eachListed
