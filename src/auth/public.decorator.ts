import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'flostra:public';

/** Marks a controller or route as reachable without a bearer token (health, metrics). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
