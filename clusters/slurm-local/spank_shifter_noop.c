/*
 * spank_shifter_noop: a SPANK plugin for the slurm-local test cluster that
 * accepts (and ignores) the job options NERSC's Shifter plugin adds on
 * Perlmutter, so Perlmutter-shaped job scripts (`#SBATCH --image=...`,
 * `--volume=...`, `--module=...`) pass sbatch/salloc/srun option parsing.
 * Nothing is done with the values; jobs run on the host, not in a container.
 *
 * Options are registered from slurm_spank_init() with spank_option_register():
 * Slurm 22.05's sbatch does not pick up a static spank_options[] table.
 * Unknown options (typos such as --imagee) are still rejected by sbatch.
 *
 * Build: gcc -shared -fPIC -o spank_shifter_noop.so spank_shifter_noop.c
 * (needs <slurm/spank.h> from libslurm-dev). Listed in plugstack.conf.
 */
#include <stddef.h>
#include <slurm/spank.h>

SPANK_PLUGIN(shifter_noop, 1);

static int accept_any(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    return 0;
}

static struct spank_option shifter_options[] = {
    {"image", "image", "Shifter image (ignored on slurm-local)", 1, 0, accept_any},
    {"volume", "volume", "Shifter volume mapping (ignored on slurm-local)", 1, 1, accept_any},
    {"module", "module", "Shifter module (ignored on slurm-local)", 1, 2, accept_any},
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    /* Options only exist for the option-parsing contexts; in the slurmd and
     * prolog/epilog contexts there is nothing to register. */
    spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return ESPANK_SUCCESS;
    for (size_t i = 0; i < sizeof(shifter_options) / sizeof(shifter_options[0]); i++) {
        spank_err_t rc = spank_option_register(sp, &shifter_options[i]);
        if (rc != ESPANK_SUCCESS) {
            slurm_error("shifter_noop: cannot register --%s: %s",
                        shifter_options[i].name, spank_strerror(rc));
            return -1;
        }
    }
    return ESPANK_SUCCESS;
}
