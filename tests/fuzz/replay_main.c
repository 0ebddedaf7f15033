/* replay_main.c - main() for the fuzz targets in builds without libFuzzer.
 *
 *   fuzz_x [-q] PATH...
 *
 * Runs LLVMFuzzerTestOneInput once on every file of each PATH (a directory,
 * read in name order, not recursively; or one file). A target reports a
 * broken invariant by aborting, so getting to the end means every input
 * passed. Arguments starting with '-' other than -q are ignored, so that a
 * libFuzzer command line (-runs=0 ...) works here too. A PATH that does not
 * exist is an error: the corpus and regression folders are always in the
 * tree. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int quiet;

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        fprintf(stderr, "%s: out of memory\n", path);
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nb;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0)
      break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    perror(path);
    free(buf);
    return -1;
  }
  if (!quiet)
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  /* An exact-size copy, so that AddressSanitizer sees any read past it. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, size_t *count) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn)
        break;
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n])
      break;
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      rc = run_file(names[i]);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  size_t count = 0;
  int paths = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0) {
      quiet = 1;
      continue;
    }
    if (argv[i][0] == '-')
      continue;
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 2;
    }
    paths++;
    int rc;
    if (S_ISDIR(st.st_mode)) {
      rc = run_dir(argv[i], &count);
    } else {
      rc = run_file(argv[i]);
      count++;
    }
    if (rc != 0)
      return 1;
  }
  if (!paths) {
    fprintf(stderr, "usage: %s [-q] DIR|FILE...\n", argv[0]);
    return 2;
  }
  printf("replay: %zu inputs passed\n", count);
  return 0;
}
