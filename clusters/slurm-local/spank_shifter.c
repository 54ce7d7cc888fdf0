/*
 * spank_shifter: a SPANK plugin for the slurm-local test cluster that takes the job options
 * NERSC's Shifter plugin adds on Perlmutter (`#SBATCH --image=...`, `--volume=...`,
 * `--module=...`) and refuses, at submission, the --image values the real plugin refuses.
 * Jobs still run on the host (tests/doubles/shifter stands in for the shifter command).
 *
 * The rules, from upstream Shifter (NERSC/shifter at 84b7d349):
 * - The image is TYPE:TAG. The text before the first ':' is the type when it is one of
 *   docker, custom, id, local (src/ImageData.c:62-68, 541-575); otherwise the whole value is
 *   the tag and the type is udiRoot.conf's defaultImageType (ImageData.c:577-587), which is
 *   `docker` on Perlmutter (its job scripts write --image=nersc/pytorch:24.06.01). Without a
 *   default type the value is refused (ImageData.c:590-594). The tag keeps only
 *   [A-Za-z0-9_:.+-@] (and '/' for docker and local) (ImageData.c:488-522); an empty one is
 *   refused (ImageData.c:609-614).
 * - At submission (sbatch/salloc/srun, wlm_integration/slurm/wrapper.c:116-117), a docker or
 *   custom image is looked up in the image gateway (`shifterimg lookup TYPE:TAG`,
 *   wlm_integration/slurm/shifterSpank.c:660-669, src/ImageData.c:120-121); an image that is not
 *   in the gateway (status READY, imagegw/shifter_imagegw/imagemngr.py:350-372) fails the
 *   submission: "Failed to lookup image. Aborting." A digest `repo@sha256:<hex>` is never in
 *   the gateway: a pull splits the name on ':' into repository and tag
 *   (imagegw/shifter_imagegw/imageworker.py:259-264), so the registry is asked for repository
 *   `repo@sha256` and can never serve it.
 * - `id:<hex>` and `local:<path>` are used as given (src/ImageData.c:116-118).
 *
 * The gateway here is a text file (plugstack.conf argument gateway=PATH), one pulled image per
 * line, "TYPE:TAG ID BASE", written by tests/doubles/shifter/shifterimg pull. Plugin arguments:
 *   gateway=PATH        the gateway file (without it every docker/custom image is unknown)
 *   default_type=TYPE   udiRoot.conf's defaultImageType (default docker; empty: none)
 *
 * Options are registered from slurm_spank_init() with spank_option_register(): Slurm 22.05's
 * sbatch does not pick up a static spank_options[] table. The plugin is named `shifter`, so the
 * job sees the option as _SLURM_SPANK_OPTION_shifter_image, as with the real plugin
 * (shifterSpank.c:694-695).
 *
 * Build: gcc -shared -fPIC -o spank_shifter.so spank_shifter.c (needs <slurm/spank.h>).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/spank.h>

SPANK_PLUGIN(shifter, 1);

#define MAX_VALUE 4096

static char gateway_path[MAX_VALUE] = "";
static char default_type[64] = "docker";

static const char *allowed_types[] = {"docker", "custom", "id", "local", NULL};

static int allowed_type(const char *type)
{
    for (const char **t = allowed_types; *t != NULL; t++) {
        if (strcmp(*t, type) == 0)
            return 1;
    }
    return 0;
}

/* ImageData.c:488-512: keep [A-Za-z0-9_:.+-@], and '/' when allowed. */
static void filter(const char *in, char *out, size_t size, int allow_slash)
{
    size_t n = 0;
    for (; *in != 0 && n + 1 < size; in++) {
        const unsigned char c = (unsigned char)*in;
        if (isalnum(c) || c == '_' || c == ':' || c == '.' || c == '+' || c == '-' || c == '@' ||
            (allow_slash && c == '/'))
            out[n++] = (char)c;
    }
    out[n] = 0;
}

/* Is "TYPE:TAG" a line of the gateway file (status READY)? */
static int in_gateway(const char *type, const char *tag)
{
    if (gateway_path[0] == 0)
        return 0;
    FILE *f = fopen(gateway_path, "r");
    if (f == NULL)
        return 0;
    char want[2 * MAX_VALUE];
    snprintf(want, sizeof(want), "%s:%s", type, tag);
    char line[3 * MAX_VALUE];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *space = strchr(line, ' ');
        if (space != NULL) {
            *space = 0;
            found = strcmp(line, want) == 0;
        }
    }
    fclose(f);
    return found;
}

static int check_image(int val, const char *optarg, int remote)
{
    (void)val;
    /* The lookup happens where the job is submitted, not on the compute node. */
    if (remote)
        return 0;
    if (optarg == NULL || optarg[0] == 0) {
        slurm_error("shifter: Invalid image - must not be zero length");
        return -1;
    }
    if (strlen(optarg) >= MAX_VALUE) {
        slurm_error("shifter: Invalid image input: too long");
        return -1;
    }
    char type[MAX_VALUE] = "";
    char raw_tag[MAX_VALUE];
    snprintf(raw_tag, sizeof(raw_tag), "%s", optarg);
    const char *colon = strchr(optarg, ':');
    if (colon != NULL) {
        char prefix[MAX_VALUE];
        snprintf(prefix, sizeof(prefix), "%.*s", (int)(colon - optarg), optarg);
        char filtered[MAX_VALUE];
        filter(prefix, filtered, sizeof(filtered), 0);
        if (allowed_type(filtered)) {
            snprintf(type, sizeof(type), "%s", filtered);
            snprintf(raw_tag, sizeof(raw_tag), "%s", colon + 1);
        }
    }
    if (type[0] == 0) {
        if (default_type[0] == 0) {
            slurm_error("shifter: Invalid image input: could not determine image type: %s "
                        "(give TYPE:TAG, e.g. docker:ubuntu:latest)", optarg);
            return -1;
        }
        snprintf(type, sizeof(type), "%s", default_type);
    }
    char tag[MAX_VALUE];
    filter(raw_tag, tag, sizeof(tag), strcmp(type, "docker") == 0 || strcmp(type, "local") == 0);
    if (tag[0] == 0) {
        slurm_error("shifter: Invalid image input: could not determine image type: %s", optarg);
        return -1;
    }
    if (strcmp(type, "id") == 0 || strcmp(type, "local") == 0)
        return 0;
    if (strchr(tag, '@') != NULL) {
        slurm_error("shifter: Failed to lookup image %s:%s. Aborting. The image gateway splits an "
                    "image name on ':' into repository and tag, so a digest (repo@sha256:...) can "
                    "never be pulled; pull a tag (shifterimg pull docker:REPO:TAG) or use podman-hpc",
                    type, tag);
        return -1;
    }
    if (!in_gateway(type, tag)) {
        slurm_error("shifter: Failed to lookup image %s:%s. Aborting. It is not in the image "
                    "gateway; pull it first: shifterimg pull %s:%s", type, tag, type, tag);
        return -1;
    }
    return 0;
}

static int accept_any(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    return 0;
}

static struct spank_option shifter_options[] = {
    {"image", "image", "Shifter image TYPE:TAG, looked up in the image gateway", 1, 0, check_image},
    {"volume", "volume", "Shifter volume mapping (ignored on slurm-local)", 1, 1, accept_any},
    {"module", "module", "Shifter modules (ignored on slurm-local)", 1, 2, accept_any},
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "gateway=", 8) == 0)
            snprintf(gateway_path, sizeof(gateway_path), "%s", av[i] + 8);
        else if (strncmp(av[i], "default_type=", 13) == 0)
            snprintf(default_type, sizeof(default_type), "%s", av[i] + 13);
        else
            slurm_error("shifter: unknown plugin argument %s", av[i]);
    }
    /* Options only exist for the option-parsing contexts; in the slurmd and
     * prolog/epilog contexts there is nothing to register. */
    spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return ESPANK_SUCCESS;
    for (size_t i = 0; i < sizeof(shifter_options) / sizeof(shifter_options[0]); i++) {
        spank_err_t rc = spank_option_register(sp, &shifter_options[i]);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("shifter: cannot register --%s: %s", shifter_options[i].name, spank_strerror(rc));
            return -1;
        }
    }
    return ESPANK_SUCCESS;
}
