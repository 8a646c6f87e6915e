__kernel void k(__global int *a){a[get_global_id(0)]+=1;}
