/* SPDX-License-Identifier: MIT */
/*
 * Replays inputs through a fuzz target without fuzzing: the seed corpus
 * and every regression input, once each, in name order.  Linked with a
 * target in the normal build (gcc, no libFuzzer), so CI runs them as unit
 * tests; a finding aborts, which fails the test.
 *
 * usage: replay_<target> FILE|DIR...   (a DIR is read one level deep)
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned replayed;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) < 0) {
		fclose(f);
		return -1;
	}
	/* Exactly the input's size, so the sanitizers see any read past it. */
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf || (n && fread(buf, 1, n, f) != n)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (getenv("REPLAY_VERBOSE"))
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	replayed++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;   /* ., .., and .gitkeep style files */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **v = realloc(names, cap * sizeof(*v));
			if (!v)
				abort();
			names = v;
		}
		if (!(names[n++] = strdup(e->d_name)))
			abort();
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), by_name);   /* qsort(NULL, 0) is UB */
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && replay_file(path) < 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i]) < 0 : replay_file(argv[i]) < 0) {
			rc = 1;
		}
	}
	if (!replayed) {
		fprintf(stderr, "replay: no input found\n");
		rc = 1;
	}
	printf("%s: %u inputs replayed\n", argc > 0 ? argv[0] : "replay", replayed);
	return rc;
}
