/* TEMPORARY placeholder; the owner replaces this file. */
#include <stdio.h>

#include "cli.h"

int cmd_reproject(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "pixflow reproject: not built yet\n");
    return 1;
}
