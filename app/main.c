#include <stdio.h>
int main(void) { puts("shardvit"); return 0; }
