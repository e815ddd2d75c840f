/* One CSV field as RFC 4180 writes it, for every CSV that shardvit writes (bench --sweep-csv,
 * plan --sweep --format csv): a field holding a comma, a double quote or a line break is
 * enclosed in double quotes with each double quote doubled; any other is written as it is. */
#ifndef SV_APP_CSV_FIELD_H
#define SV_APP_CSV_FIELD_H

#include <stdio.h>
#include <string.h>

static inline void sv_csv_field(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

#endif
