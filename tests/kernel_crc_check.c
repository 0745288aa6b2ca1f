/* The CRC paths of the kernels, outside Python: the check values of CRC-32C and CRC-32, and the
 * CPU instruction path equal to the table path on random spans. tests/test_kernel_builds.py
 * compiles it for AArch64 and runs it under qemu-user (the CRC extension on), so the AArch64 code
 * a wheel for that architecture carries is tested on an x86-64 machine too. */
#include <stdio.h>
#include <stdlib.h>
#include "kl_all.h"
int main(void) {
    static uint8_t buf[20000];
    const char *s = "123456789";
    kl_bytes a = {(const uint8_t *)s, 9};
    kl_crc_init(1, 1);
    printf("features %d hw %d\n", kl_cpu_features(), kl_hw_crc32c);
    int ok = kl_crc32c(a, 0, 9) == 0xE3069283 && kl_crc32(a, 0, 9) == 0xCBF43926;
    srand(1);
    for (int i = 0; i < 20000; i++) buf[i] = rand();
    kl_bytes b = {buf, 20000};
    for (int t = 0; t < 300; t++) {
        int64_t st = rand() % 9000, en = st + rand() % 9000;
        kl_crc_init(1, 1); int64_t h = kl_crc32c(b, st, en);
        kl_crc_init(0, 0); int64_t w = kl_crc32c(b, st, en);
        if (h != w) ok = 0;
    }
    printf("%s\n", ok ? "CRC OK" : "CRC MISMATCH");
    return !ok;
}
