/* pixflow - command-line front end: `pixflow <command> [options]`.
 *
 * main() only dispatches; each command lives in its own cmd_<name>.c with its
 * own --help. Exit codes: 0 success, 1 the work failed, 2 bad command line. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pixflow/pixflow.h"

/* Only commands that exist are listed here (and therefore in --help). */
static const cli_command commands[] = {
    {"info", "versions, backends, devices, NVML, pool defaults; --self-check tests a device",
     cmd_info},
    {"run", "run a pipeline described in a YAML file; progress, statistics, --trace", cmd_run},
    {"model", "inspect, run and test ONNX/TFLite models (inspect | run | test)", cmd_model},
    {"reproject", "360 equirect images or video -> perspective views or cube maps", cmd_reproject},
    {"segment", "person segmentation of video or images: background blur/colour/image, masks", cmd_segment},
    {"faces", "face detection, 468 landmarks and ids per stream: JSON Lines, drawings", cmd_faces},
    {"bench", "measure a model (throughput, latency, plots) or the image ops", cmd_bench},
    {"queue", "a job queue on Redis shared by many machines (add | status | results | retry ...)",
     cmd_queue},
    {"worker", "take jobs from a Redis queue and run them (pixflow worker --redis URL --queue NAME)",
     cmd_worker},
};
#define COMMAND_COUNT ((int)(sizeof commands / sizeof commands[0]))

static void list_commands(FILE *f)
{
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(f, "  %-10s  %s\n", commands[i].name, commands[i].summary);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pixflow <command> [options]\n"
            "       pixflow help [command]\n"
            "       pixflow --help | --version\n"
            "\n"
            "commands:\n");
    list_commands(f);
    fprintf(f,
            "\n"
            "Run 'pixflow <command> --help' for the options of a command.\n"
            "Environment: PIXFLOW_DEVICE (default device: auto, cpu, cuda, cuda:N),\n"
            "             PIXFLOW_LOG (log level: error, warn, info, debug, trace).\n");
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "pixflow: unknown command '%s'; commands:", name);
    for (int i = 0; i < COMMAND_COUNT; i++) fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, " (see 'pixflow --help')\n");
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        /* The tool's own version and the library actually loaded (they differ
         * when an older or newer libpixflow.so is found first). */
        printf("pixflow %s (libpixflow %s)\n", PF_VERSION_STRING, pf_version_string());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        const cli_command *c = find_command(argv[2]);
        if (!c) return unknown_command(argv[2]);
        char help[] = "--help";
        char *sub_argv[] = {argv[2], help, NULL};
        return c->run(2, sub_argv);
    }
    if (cmd[0] == '-') {
        fprintf(stderr, "pixflow: unknown option '%s' (see 'pixflow --help')\n", cmd);
        return CLI_EXIT_USAGE;
    }
    const cli_command *c = find_command(cmd);
    if (!c) return unknown_command(cmd);
    /* Reads PIXFLOW_LOG now, so a bad value is reported by every command,
     * not only by those that happen to log (the library reads it lazily). */
    (void)pf_log_get_level();
    return c->run(argc - 1, argv + 1);
}
