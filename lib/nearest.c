/* nearest.c - see nearest.h. */
#include "nearest.h"

#include <ctype.h>
#include <string.h>

int jrpc__name_typo(const char *typed, const char *known) {
  /* Edit distance (Levenshtein) with one row; names are short, longer
   * ones are no typo of a key. */
  enum { MAXN = 64 };
  size_t n = strlen(typed), m = strlen(known);
  if (n >= MAXN || m >= MAXN)
    return -1;
  int most = (n <= 4 || m <= 4) ? 1 : 2;
  if ((n > m ? n - m : m - n) > (size_t)most)
    return -1;
  int row[MAXN];
  for (size_t j = 0; j <= m; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int up = row[j];
      int same = tolower((unsigned char)typed[i - 1]) ==
                 tolower((unsigned char)known[j - 1]);
      int best = diag + !same;
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  /* Same letters in another case is the nearest typo of all. */
  if (strcmp(typed, known) == 0 || row[m] > most)
    return -1;
  return row[m];
}
