package lockview

// LikePattern is likePattern, for the tests' reference queries.
var LikePattern = likePattern
