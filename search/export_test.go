package search

// ResetCaches empties the process-wide stem caches and build buffers, so that a
// benchmark measures a cold build.
var ResetCaches = resetCaches

// RegexNeed returns the literal text every match of pattern contains (see literals).
func RegexNeed(pattern string) ([][]string, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return c.need, nil
}

// RegexWith is Index.Regex, with the trigram index built and used (useTrigrams) or not
// used at all, where Regex uses it only once a background build is done.
func RegexWith(ix *Index, pattern string, opts Options, useTrigrams bool) ([]Result, error) {
	c, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	rt := ix.regexSource()
	var tg *trigrams
	if useTrigrams {
		tg = rt.waitTrigrams()
	}
	return ix.regex(c, opts, rt, tg)
}
